// Writes test/fixtures/pii-set.jsonl: the labelled lines the PII detectors
// are measured on (docs/compliance.md). Each line is {text, pii: [{kind,
// value}]}: the values a detector must find, built valid by construction
// (check digits computed here), beside look-alikes built to fail their
// validation, which must not be found. Deterministic (seeded); run
// `node scripts/gen-pii-set.mjs` to regenerate after changing it.
import { writeFileSync } from "node:fs";

let seed = 20261203;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const int = (n) => Math.floor(rand() * n);
const pick = (xs) => xs[int(xs.length)];
const digits = (n) => Array.from({ length: n }, () => int(10)).join("");
const alnum = (n, set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") => Array.from({ length: n }, () => set[int(set.length)]).join("");

function luhnDigit(body) {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return String((10 - (sum % 10)) % 10);
}
function card(valid) {
  const [prefix, len] = pick([
    ["4", 16],
    ["51", 16],
    ["55", 16],
    ["37", 15],
    ["6011", 16],
  ]);
  const body = prefix + digits(len - prefix.length - 1);
  let check = luhnDigit(body);
  if (!valid) check = String((Number(check) + 1 + int(8)) % 10);
  const d = body + check;
  const style = int(3);
  if (style === 0) return d;
  const sep = style === 1 ? " " : "-";
  return len === 15 ? `${d.slice(0, 4)}${sep}${d.slice(4, 10)}${sep}${d.slice(10)}` : d.match(/.{4}/g).join(sep);
}
function mod97(s) {
  let r = 0;
  for (const ch of s) {
    const v = /[A-Z]/.test(ch) ? String(ch.charCodeAt(0) - 55) : ch;
    for (const x of v) r = (r * 10 + Number(x)) % 97;
  }
  return r;
}
function iban(valid) {
  const [cc, len] = pick([
    ["DE", 22],
    ["GB", 22],
    ["FR", 27],
    ["NL", 18],
  ]);
  const bban = cc === "GB" ? alnum(4, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") + digits(len - 8) : cc === "NL" ? alnum(4, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") + digits(len - 8) : digits(len - 4);
  let check = 98 - mod97(bban + cc + "00");
  if (!valid) check = ((check + 1 + int(90)) % 97) + 2;
  const s = cc + String(check).padStart(2, "0") + bban;
  return int(2) === 0 ? s : s.match(/.{1,4}/g).join(" ");
}
const W = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
function cnId(valid) {
  const region = pick(["110101", "310104", "440305", "510107", "330106"]);
  const y = 1950 + int(55),
    m = 1 + int(12),
    d = 1 + int(28);
  const body = region + String(y) + String(m).padStart(2, "0") + String(d).padStart(2, "0") + digits(3);
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += Number(body[i]) * W[i];
  let check = "10X98765432"[sum % 11];
  if (!valid) check = "10X98765432"[(sum + 1 + int(9)) % 11];
  return body + check;
}
function ssn(valid) {
  if (valid)
    return `${String(1 + int(665))
      .padStart(3, "0")
      .replace(/^666$/, "667")}-${String(1 + int(99)).padStart(2, "0")}-${String(1 + int(9999)).padStart(4, "0")}`;
  return pick([
    `000-${digits(2)}-${digits(4)}`,
    `666-${String(1 + int(99)).padStart(2, "0")}-${String(1 + int(9999)).padStart(4, "0")}`,
    `9${digits(2)}-${String(1 + int(99)).padStart(2, "0")}-${String(1 + int(9999)).padStart(4, "0")}`,
    `${String(100 + int(500))}-00-${digits(4)}`,
  ]);
}
const octet = () => String(int(256));
function ipv4(valid) {
  return valid ? [octet(), octet(), octet(), octet()].join(".") : pick([`${256 + int(700)}.${octet()}.${octet()}.${octet()}`, `${octet()}.${octet()}.${octet()}`, `${octet()}.${octet()}.${300 + int(600)}.${octet()}`]);
}
const hex = (n) => alnum(n, "0123456789abcdef");
function ipv6(valid) {
  return valid
    ? pick([`2001:db8::${hex(1 + int(4))}`, `fe80::${hex(4)}:${hex(4)}:${hex(4)}:${hex(4)}`, `2001:0db8:${hex(4)}:${hex(4)}:${hex(4)}:${hex(4)}:${hex(4)}:${hex(4)}`, `::ffff:${hex(4)}:${hex(4)}`])
    : pick([`${int(24)}:${String(int(60)).padStart(2, "0")}:${String(int(60)).padStart(2, "0")}`, `${hex(4)}:${hex(4)}`]);
}
function phone(valid) {
  if (!valid) return pick([`#${digits(8)}`, `ext. ${digits(4)}`, `${2000 + int(30)}-${String(1 + int(12)).padStart(2, "0")}-${String(1 + int(28)).padStart(2, "0")}`, `${digits(3)}-${digits(4)}`, `1${int(3)}${digits(9)}`]);
  return pick([
    `+44 20 ${digits(4)} ${digits(4)}`,
    `+1-${2 + int(8)}${digits(2)}-${2 + int(8)}${digits(2)}-${digits(4)}`,
    `+86 1${3 + int(7)}${digits(1)} ${digits(4)} ${digits(4)}`,
    `(${2 + int(8)}${digits(2)}) ${2 + int(8)}${digits(2)}-${digits(4)}`,
    `${2 + int(8)}${digits(2)}-${2 + int(8)}${digits(2)}-${digits(4)}`,
    `1${3 + int(7)}${digits(9)}`,
    `+49 30 ${digits(8)}`,
  ]);
}
const names = ["alice", "bob.smith", "chen.wei", "li_na", "zhang-san", "m.garcia", "o'neil".replace("'", ""), "j.doe+tag"];
const domains = ["example.com", "mail.example.org", "corp.example.cn", "example.co.uk", "uni.edu"];
function email(valid) {
  return valid ? `${pick(names)}${int(100)}@${pick(domains)}` : pick([`${pick(names)} at ${pick(domains)}`, `${pick(names)}@localhost`, `@${pick(domains)}`, `${pick(names)}@@${pick(domains)}`]);
}
function secret(valid) {
  if (!valid) return pick(["sk-learn", "Bearer token", "ghp_short", "AKIA", "sk-this-is-not-a-key", `Bearer ${"a".repeat(30)}`]);
  return pick([`sk-${alnum(48)}`, `sk-ant-${alnum(40)}`, `ghp_${alnum(36)}`, `AKIA${alnum(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")}`, `xoxb-${digits(12)}-${alnum(24)}`, `Bearer ${alnum(40)}`]);
}
const MAKERS = { email, phone, card, iban, cn_id: cnId, us_ssn: ssn, ipv4, ipv6, secret };
const TEMPLATES = [
  (x) => `Please contact me at ${x} about the invoice.`,
  (x) => `我的信息：${x}，请尽快处理。`,
  (x) => `客户提供了${x}用于核实身份`,
  (x) => `Forwarding the details (${x}) to the team.`,
  (x) => `Note: "${x}" was in the ticket.`,
  (x) => `请联系「${x}」。`,
  (x) => `${x}`,
  (x) => `Reference ${x}; see the attached form.`,
  (x) => `The log line said: user=${x} status=ok`,
  (x) => `转账到 ${x} 之后请回复邮件。`,
];
const FILLERS = ["The meeting is at 10:30 on 2026-12-03.", "Order total: 1,299.00 USD.", "版本 3.2.1 已发布。", "Ticket #48213 was closed.", "我们在第 42 页讨论过这个问题。", "Build 20261203.4 passed all checks."];

const lines = [];
const kinds = Object.keys(MAKERS);
for (let i = 0; i < 620; i++) {
  const kind = kinds[i % kinds.length];
  // Every third line of each kind is a look-alike (independent of the kind, which cycles every nine lines).
  const valid = Math.floor(i / kinds.length) % 3 !== 2;
  const value = MAKERS[kind](valid);
  let text = pick(TEMPLATES)(value);
  const pii = [];
  // Expected findings: the value itself when it was built valid (a secret's "Bearer " is context, not the token).
  if (valid) pii.push({ kind, value: kind === "secret" && value.startsWith("Bearer ") ? value.slice(7) : value });
  // A second finding of another kind in some lines, and a filler of look-alikes in others.
  if (i % 5 === 0) {
    const other = kinds[(i * 7 + 3) % kinds.length];
    if (other !== kind) {
      const v = MAKERS[other](true);
      text += ` ${pick(["Also", "另外", "CC"])}: ${v}.`;
      pii.push({ kind: other, value: other === "secret" && v.startsWith("Bearer ") ? v.slice(7) : v });
    }
  }
  if (i % 4 === 1) text = `${pick(FILLERS)} ${text}`;
  lines.push(JSON.stringify({ text, pii }));
}
writeFileSync(new URL("../test/fixtures/pii-set.jsonl", import.meta.url), `${lines.join("\n")}\n`);
console.log(`${lines.length} lines`);
