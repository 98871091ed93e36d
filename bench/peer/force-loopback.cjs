// Preload for the peer gateway: it binds every interface; the benchmark must
// only ever listen on loopback. Rewrites any listen() to 127.0.0.1.
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "object" && args[0] !== null) args[0] = { ...args[0], host: "127.0.0.1" };
  else if (typeof args[0] === "number" || typeof args[0] === "string") {
    const rest = args.slice(1).filter((a) => typeof a === "function" || typeof a === "number");
    return listen.call(this, Number(args[0]), "127.0.0.1", ...rest.filter((a) => typeof a === "function"));
  }
  return listen.apply(this, args);
};
