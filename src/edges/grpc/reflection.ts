import { create, type DescFile, type DescService, toBinary } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** Descriptor lookups for the services a server exposes, built once. */
interface DescriptorIndex {
  readonly services: readonly string[];
  byFilename(name: string): DescFile | undefined;
  bySymbol(symbol: string): DescFile | undefined;
  /** The file and everything it imports, each serialized once, the file first. */
  serialize(file: DescFile): Uint8Array[];
}

function createDescriptorIndex(services: readonly DescService[]): DescriptorIndex {
  const files = new Map<string, DescFile>();
  const symbols = new Map<string, DescFile>();
  const add = (file: DescFile) => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    for (const type of nestedTypes(file)) {
      symbols.set(type.typeName, file);
      if (type.kind === "service") for (const method of type.methods) symbols.set(`${type.typeName}.${method.name}`, file);
    }
    file.dependencies.forEach(add);
  };
  services.forEach((s) => add(s.file));
  const bytes = new Map<DescFile, Uint8Array>();
  const encode = (file: DescFile) => {
    let b = bytes.get(file);
    if (!b) bytes.set(file, (b = toBinary(FileDescriptorProtoSchema, file.proto)));
    return b;
  };
  return {
    services: services.map((s) => s.typeName).sort(),
    byFilename: (name) => files.get(name),
    bySymbol: (symbol) => symbols.get(symbol.replace(/^\./, "")),
    serialize(file) {
      const out: DescFile[] = [];
      const visit = (f: DescFile) => {
        if (out.includes(f)) return;
        out.push(f);
        f.dependencies.forEach(visit);
      };
      visit(file);
      return out.map(encode);
    },
  };
}

type Version = typeof v1 | typeof v1alpha;
type Request = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;

function answer(index: DescriptorIndex, version: Version, req: Request) {
  const respond = (messageResponse: Record<string, unknown>) =>
    create(version.ServerReflectionResponseSchema as typeof v1.ServerReflectionResponseSchema, {
      validHost: req.host,
      originalRequest: req as v1.ServerReflectionRequest,
      messageResponse: messageResponse as v1.ServerReflectionResponse["messageResponse"],
    });
  const notFound = (what: string) => respond({ case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage: `${what} not found` } });
  const files = (file: DescFile | undefined, what: string) => (file ? respond({ case: "fileDescriptorResponse", value: { fileDescriptorProto: index.serialize(file) } }) : notFound(what));

  const r = req.messageRequest;
  switch (r.case) {
    case "listServices":
      return respond({ case: "listServicesResponse", value: { service: index.services.map((name) => ({ name })) } });
    case "fileByFilename":
      return files(index.byFilename(r.value), `file ${r.value}`);
    case "fileContainingSymbol":
      return files(index.bySymbol(r.value), `symbol ${r.value}`);
    case "fileContainingExtension":
      return notFound(`extension ${r.value.containingType}(${r.value.extensionNumber})`);
    case "allExtensionNumbersOfType":
      // Our contract defines no extensions: every known type has none.
      return index.bySymbol(r.value) ? respond({ case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: [] } }) : notFound(`type ${r.value}`);
    default:
      return respond({ case: "errorResponse", value: { errorCode: Code.InvalidArgument, errorMessage: "empty reflection request" } });
  }
}

/**
 * gRPC server reflection (v1 and v1alpha), so grpcurl and buf curl work
 * without proto files. connect-node has no reflection package; the protocol
 * is small: answer each request on the bidirectional stream, in order.
 */
export function registerReflection(router: ConnectRouter, services: readonly DescService[]): void {
  const all = [...services, v1.ServerReflection, v1alpha.ServerReflection];
  const index = createDescriptorIndex(all);
  router.service(v1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield answer(index, v1, req);
    },
  });
  router.service(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield answer(index, v1alpha, req) as unknown as v1alpha.ServerReflectionResponse;
    },
  });
}
