import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { type AdminService, AuditActorSchema, AuditBreak, AuditEventSchema, ListAuditEventsResponseSchema, VerifyAuditChainResponseSchema } from "../../../gen/sluice/admin/v1/admin_service_pb.js";
import type { AuditRow } from "../../audit/audit-chain.js";
import type { AuditDetails } from "../../audit/audit-event.js";
import type { AuditFilter } from "../../audit/audit-list.js";
import type { AuditLog } from "../../audit/audit-log.js";
import type { AuditTrail } from "../../audit/audit-trail.js";
import { sha256Hex } from "../../config/key-hash.js";
import { GatewayError } from "../../core/errors.js";
import { bearerToken } from "../../tenancy/authenticate.js";
import { keyId } from "../../tenancy/principal.js";
import { EXCHANGE } from "./rpc-handler.js";

type Guard = <R>(work: () => Promise<R>) => (ctx: HandlerContext) => Promise<R>;
type Impl = Omit<ServiceImpl<typeof AdminService>, "watchStats">;

const BREAKS = { missing: AuditBreak.MISSING, altered: AuditBreak.ALTERED, chain: AuditBreak.CHAIN } as const;

const OFF = () => new GatewayError("failed_precondition", "the audit log is off: it needs store.postgres (compliance.audit.enabled)");

function eventOf(row: AuditRow) {
  const e = row.event;
  return create(AuditEventSchema, {
    seq: BigInt(row.seq),
    id: e.id,
    time: timestampFromMs(e.at),
    actor: create(AuditActorSchema, { kind: e.actor.kind, id: e.actor.id, remote: e.actor.remote ?? "" }),
    action: e.action,
    target: e.target ?? "",
    outcome: e.outcome,
    requestId: e.requestId ?? "",
    details: Object.fromEntries(Object.entries(e.details ?? {}).map(([k, v]) => [k, String(v)])),
    prevHash: row.prevHash,
    hash: row.hash,
  });
}

/** AdminService's audit calls (docs/compliance.md, "The audit log"); FAILED_PRECONDITION while the log is off. */
export function auditHandlers(log: AuditLog | undefined, guard: Guard): Pick<Impl, "listAuditEvents" | "verifyAuditChain"> {
  return {
    listAuditEvents: (req, ctx) =>
      guard(async () => {
        if (!log) throw OFF();
        const f = req.filter;
        const filter: AuditFilter = {
          ...(f?.action ? { action: f.action } : {}),
          ...(f?.actorId ? { actorId: f.actorId } : {}),
          ...(f?.target ? { target: f.target } : {}),
          ...(f?.outcome ? { outcome: f.outcome as NonNullable<AuditFilter["outcome"]> } : {}),
          ...(f?.since ? { since: timestampMs(f.since) } : {}),
          ...(f?.until ? { until: timestampMs(f.until) } : {}),
        };
        const page = await log.list(filter, { size: req.pageSize, token: req.pageToken });
        return create(ListAuditEventsResponseSchema, { events: page.rows.map(eventOf), nextPageToken: page.nextToken ?? "" });
      })(ctx),
    verifyAuditChain: (_req, ctx) =>
      guard(async () => {
        if (!log) throw OFF();
        const result = await log.verify();
        return create(VerifyAuditChainResponseSchema, {
          ok: result.ok,
          checked: BigInt(result.checked),
          lastSeq: BigInt(result.lastSeq),
          lastHash: result.lastHash,
          ...(result.firstBreak ? { firstBreakSeq: BigInt(result.firstBreak.seq), firstBreak: BREAKS[result.firstBreak.reason] } : {}),
        });
      })(ctx),
  };
}

/** What an admin call records: its action, what it was done to, and (names only) what it changed. */
interface AuditedCall {
  readonly action: string;
  readonly target: (req: Record<string, unknown>) => string;
  readonly details?: (req: Record<string, unknown>) => AuditDetails;
  /** What the answer adds: the id of the key or level acted on, which its name alone does not tell (a later one may bear it). */
  readonly resultDetails?: (res: Record<string, unknown>) => AuditDetails;
}

const byName = (req: Record<string, unknown>) => String(req.name ?? "");
/** The id of the key, team or business line an answer carries in `field`. */
const idIn =
  (field: string) =>
  (res: Record<string, unknown>): AuditDetails => {
    const id = (res[field] as { id?: unknown } | undefined)?.id;
    return typeof id === "string" && id !== "" ? { id } : {};
  };
const masked = (req: Record<string, unknown>): AuditDetails => {
  const paths = (req.updateMask as { paths?: string[] } | undefined)?.paths ?? [];
  return paths.length > 0 ? { fields: paths.join(",") } : {};
};

/** The admin calls that change something; reads are not audited. */
const AUDITED: Partial<Record<keyof Impl, AuditedCall>> = {
  createKey: { action: "key.create", target: byName, resultDetails: idIn("info") },
  updateKey: { action: "key.update", target: byName, details: masked, resultDetails: idIn("key") },
  revokeKey: { action: "key.revoke", target: byName, resultDetails: idIn("key") },
  createTeam: { action: "team.create", target: byName, resultDetails: idIn("team") },
  updateTeam: { action: "team.update", target: byName, details: masked, resultDetails: idIn("team") },
  deleteTeam: { action: "team.delete", target: byName, resultDetails: idIn("team") },
  createBusinessLine: { action: "business_line.create", target: byName, resultDetails: idIn("businessLine") },
  updateBusinessLine: { action: "business_line.update", target: byName, details: masked, resultDetails: idIn("businessLine") },
  deleteBusinessLine: { action: "business_line.delete", target: byName, resultDetails: idIn("businessLine") },
  createDataset: { action: "dataset.create", target: byName, details: (req): AuditDetails => ({ alias: String(req.alias ?? "") }) },
  startEvaluation: {
    action: "evaluation.start",
    target: (req) => String(req.dataset ?? ""),
    details: (req): AuditDetails => ({ candidates: ((req.candidates as string[] | undefined) ?? []).join(","), ...(req.key ? { key: String(req.key) } : {}) }),
  },
  purgeCache: {
    action: "cache.purge",
    target: (req) => String(req.alias ?? "") || String(req.requestId ?? "") || "*",
    details: (req): AuditDetails => ({ ...(req.keyName ? { key: String(req.keyName) } : {}), ...(req.requestId ? { requestId: String(req.requestId) } : {}) }),
  },
  purgeResponses: {
    action: "responses.purge",
    target: (req) => String(req.keyId ?? "") || String(req.keyName ?? ""),
    details: (req): AuditDetails => (req.keyName ? { key: String(req.keyName) } : {}),
    resultDetails: (res): AuditDetails => ({ ids: ((res.keyIds as string[] | undefined) ?? []).join(","), purged: Number(res.purged ?? 0), conversations: Number(res.conversationsPurged ?? 0) }),
  },
  // The key's id and the server, never the token.
  setMcpCredential: { action: "mcp_credential.set", target: (req) => String(req.server ?? ""), details: (req): AuditDetails => ({ id: String(req.keyId ?? "") }) },
  deleteMcpCredential: { action: "mcp_credential.delete", target: (req) => String(req.server ?? ""), details: (req): AuditDetails => ({ id: String(req.keyId ?? "") }) },
  // The provider and the new key's fingerprint, never the key.
  setProviderKey: { action: "provider_key.set", target: (req) => String(req.provider ?? ""), resultDetails: (res): AuditDetails => ({ fingerprint: String((res.key as { fingerprint?: string } | undefined)?.fingerprint ?? "") }) },
  deleteProviderKey: { action: "provider_key.delete", target: (req) => String(req.provider ?? "") },
};

/**
 * The service with every changing call recorded in the audit trail, after
 * it ran: `ok`, or `failed` with the error code. The actor is the admin
 * key by id (the first 12 hex digits of its SHA-256), never the key; a
 * call the admin key did not authorize is an authentication failure, which
 * the key check records, not an admin action.
 */
export function audited(impl: Impl, trail: AuditTrail): Impl {
  const wrapped: Record<string, unknown> = { ...impl };
  for (const [method, call] of Object.entries(AUDITED) as Array<[keyof Impl, AuditedCall]>) {
    const original = impl[method] as (req: Record<string, unknown>, ctx: HandlerContext) => Promise<unknown>;
    wrapped[method] = async (req: Record<string, unknown>, ctx: HandlerContext) => {
      const record = (outcome: "ok" | "failed", extra: AuditDetails = {}) => {
        const exchange = ctx.values.get(EXCHANGE);
        let id = "";
        try {
          id = keyId(sha256Hex(bearerToken(ctx.requestHeader.get("authorization") ?? undefined)));
        } catch {
          // Authorized calls carry the key; nothing to name otherwise.
        }
        trail.record({
          actor: { kind: "admin", id, ...(exchange?.remote ? { remote: exchange.remote } : {}) },
          action: call.action,
          target: call.target(req),
          outcome,
          ...(exchange ? { requestId: exchange.requestId } : {}),
          details: { ...call.details?.(req), ...extra },
        });
      };
      try {
        const result = await original(req, ctx);
        record("ok", call.resultDetails?.(result as Record<string, unknown>));
        return result;
      } catch (error) {
        const code = ConnectError.from(error).code;
        if (code !== Code.Unauthenticated && code !== Code.PermissionDenied) record("failed", { code: Code[code] });
        throw error;
      }
    };
  }
  return wrapped as unknown as Impl;
}
