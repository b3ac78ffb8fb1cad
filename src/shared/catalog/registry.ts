/**
 * Portal registry document v1 (docs/contracts/portal-registry-v1.md): route
 * key → Tool Service entries. An invalid entry rejects its route only; a
 * document that is not a registry at all is a Portal failure. Shared because the refresh worker reads it from
 * the Portal and from Redis, and static mode builds one from the config.
 */
import { Type, Compile } from '../vendor/typebox.js';
import { normaliseOrigin } from '../config/origin.js';
import { ROUTE_KEY_PATTERN, ServiceEntrySchema, type ServiceEntry } from '../config/schema.js';
import { GatewayError, GatewayErrorCode } from '../errors.js';

const routeKeyRe = new RegExp(ROUTE_KEY_PATTERN);

/** The document's outer shape; route values are checked one by one. */
const DocumentSchema = Type.Object({
  revision: Type.String({ minLength: 1, maxLength: 256 }),
  routes: Type.Record(Type.String(), Type.Unknown()),
});
/**
 * Registry entries are an external contract that extends compatibly
 * (docs/contracts/portal-registry-v1.md §2):
 * unknown members are allowed here and dropped, unlike in the config file,
 * where an unknown key is a typo.
 */
const RegistryEntrySchema = Type.Object({
  id: ServiceEntrySchema.properties.id,
  baseUrl: ServiceEntrySchema.properties.baseUrl,
  manifestPath: ServiceEntrySchema.properties.manifestPath,
});
const EntriesSchema = Type.Array(RegistryEntrySchema, { minItems: 1, maxItems: 256 });
const documentValidator = Compile(DocumentSchema);
const entriesValidator = Compile(EntriesSchema);

/** A registry after validation: usable routes, and the routes rejected with their reason. */
export interface Registry {
  revision: string;
  routes: Record<string, ServiceEntry[]>;
  rejected: Record<string, string>;
}

/**
 * Validates a registry document. Throws PORTAL_INVALID when the document as a
 * whole is unreadable; rejects individual routes otherwise.
 */
export function parseRegistry(doc: unknown): Registry {
  if (!documentValidator.Check(doc)) {
    const first = documentValidator.Errors(doc)[0];
    throw new GatewayError(GatewayErrorCode.PortalInvalid, `registry document is not a v1 registry: ${first ? `${first.instancePath || '/'} ${first.message}` : 'wrong shape'}`);
  }
  const routes: Record<string, ServiceEntry[]> = {};
  const rejected: Record<string, string> = {};
  for (const [routeKey, entries] of Object.entries(doc.routes)) {
    const problem = routeProblem(routeKey, entries);
    if (problem === null) {
      routes[routeKey] = (entries as ServiceEntry[]).map((e) => ({ id: e.id, baseUrl: e.baseUrl, ...(e.manifestPath !== undefined ? { manifestPath: e.manifestPath } : {}) }));
    } else rejected[routeKey] = problem;
  }
  return { revision: doc.revision, routes, rejected };
}

function routeProblem(routeKey: string, entries: unknown): string | null {
  if (!routeKeyRe.test(routeKey)) return `route key is not a lowercase DNS label`;
  if (!entriesValidator.Check(entries)) {
    const first = entriesValidator.Errors(entries)[0];
    return `invalid registry entry: ${first ? `${first.instancePath || '/'} ${first.message}` : 'wrong shape'}`;
  }
  const ids = new Set<string>();
  for (const [i, entry] of entries.entries()) {
    if (ids.has(entry.id)) return `invalid registry entry: /${i}/id duplicate Tool Service id "${entry.id}"`;
    ids.add(entry.id);
    if (normaliseOrigin(entry.baseUrl) === null) return `invalid registry entry: /${i}/baseUrl must be an absolute http(s) URL`;
  }
  return null;
}

/** A registry made from the static config (static mode). */
export function staticRegistry(routes: Readonly<Record<string, readonly ServiceEntry[]>>): Registry {
  return { revision: 'static', routes: Object.fromEntries(Object.entries(routes).map(([k, v]) => [k, v.map((e) => ({ ...e }))])), rejected: {} };
}
