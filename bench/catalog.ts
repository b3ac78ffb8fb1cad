/**
 * Deterministic, realistic Tool Service manifests for benchmarks (SPEC §7).
 *
 * Why generated rather than a fixture file: the benches need catalogs of any
 * size (1, 50, 128 tools) whose wire size is representative of real enterprise
 * tools — long-ish descriptions, enums, nested objects, arrays — because the
 * cost of `tools/list` is dominated by bytes, and the cost of `tools/call` by
 * schema validation of nested arguments. Everything here is a pure function of
 * its inputs (no Math.random, no clock), so runs are comparable.
 *
 * Running `node dist/bench/catalog.js` prints the `tools/list` result sizes.
 */
import { pathToFileURL } from 'node:url';

/** JSON Schema subset used by the generated tools. */
export interface JsonSchema {
  type?: 'object' | 'string' | 'integer' | 'number' | 'boolean' | 'array';
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean;
  items?: JsonSchema;
  enum?: string[];
  format?: 'date' | 'email';
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  default?: unknown;
}

/** One tool entry of a Tool Service manifest (SPEC §7). */
export interface ManifestTool {
  name: string;
  version: string;
  active: boolean;
  title: string;
  description: string;
  inputSchema: JsonSchema;
  annotations: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
  timeoutMs: number;
  execution: { path: string };
}

/** A Tool Service manifest document (`GET {baseUrl}/manifest`). */
export interface Manifest {
  service: string;
  tools: ManifestTool[];
}

/** Options of {@link generateManifest}. */
export interface ManifestOptions {
  /** Value of the manifest's `service` field; does not influence tool names. */
  serviceId: string;
  /**
   * Index of the first tool (default 0). Lets several services of one route
   * have disjoint tool names, since names must be unique inside a route.
   */
  startIndex?: number;
}

interface Domain {
  key: string;
  system: string;
  entities: string[];
  statuses: string[];
  fields: string[];
}

// Ten business domains with three entities each: enough variety that tool
// names, enums and descriptions differ the way they do in a real catalog.
const DOMAINS: readonly Domain[] = [
  { key: 'crm', system: 'the CRM', entities: ['customer', 'contact', 'opportunity'], statuses: ['lead', 'prospect', 'active', 'churned'], fields: ['name', 'owner', 'segment', 'region'] },
  {
    key: 'hr',
    system: 'the HR information system',
    entities: ['employee', 'leave_request', 'position'],
    statuses: ['draft', 'pending', 'approved', 'rejected'],
    fields: ['fullName', 'team', 'manager', 'location'],
  },
  {
    key: 'erp',
    system: 'the ERP',
    entities: ['purchase_order', 'supplier', 'invoice'],
    statuses: ['open', 'partially_received', 'received', 'closed'],
    fields: ['number', 'supplier', 'total', 'currency'],
  },
  {
    key: 'finance',
    system: 'the general ledger',
    entities: ['ledger_entry', 'budget', 'expense_report'],
    statuses: ['draft', 'submitted', 'posted', 'reversed'],
    fields: ['account', 'costCenter', 'amount', 'period'],
  },
  {
    key: 'inventory',
    system: 'the warehouse management system',
    entities: ['stock_item', 'warehouse', 'shipment'],
    statuses: ['in_stock', 'low', 'backordered', 'discontinued'],
    fields: ['sku', 'description', 'quantity', 'bin'],
  },
  {
    key: 'support',
    system: 'the service desk',
    entities: ['ticket', 'sla_policy', 'knowledge_article'],
    statuses: ['new', 'triaged', 'in_progress', 'waiting_on_customer'],
    fields: ['subject', 'priority', 'assignee', 'queue'],
  },
  {
    key: 'docs',
    system: 'the document management system',
    entities: ['document', 'template', 'folder'],
    statuses: ['draft', 'in_review', 'published', 'archived'],
    fields: ['title', 'author', 'version', 'classification'],
  },
  {
    key: 'analytics',
    system: 'the analytics warehouse',
    entities: ['report', 'dashboard', 'metric'],
    statuses: ['scheduled', 'running', 'succeeded', 'failed'],
    fields: ['name', 'owner', 'refreshedAt', 'dataset'],
  },
  {
    key: 'calendar',
    system: 'the corporate calendar',
    entities: ['meeting', 'room', 'resource_booking'],
    statuses: ['tentative', 'confirmed', 'cancelled'],
    fields: ['subject', 'organizer', 'start', 'end'],
  },
  {
    key: 'itsm',
    system: 'the IT service management tool',
    entities: ['asset', 'incident', 'change_request'],
    statuses: ['requested', 'assessed', 'approved', 'implemented'],
    fields: ['tag', 'model', 'assignedTo', 'site'],
  },
];

interface Verb {
  key: string;
  title: string;
  readOnly: boolean;
  idempotent: boolean;
  destructive: boolean;
  /** First description sentence; `$e` = entity words, `$s` = system. */
  what: string;
  /** Second description sentence: when to use it. */
  when: string;
}

const VERBS: readonly Verb[] = [
  {
    key: 'lookup',
    title: 'Look up',
    readOnly: true,
    idempotent: true,
    destructive: false,
    what: 'Returns one $e from $s by identifier, with owner and status.',
    when: 'Prefer search for fuzzy matches.',
  },
  {
    key: 'search',
    title: 'Search',
    readOnly: true,
    idempotent: true,
    destructive: false,
    what: 'Searches $s for $e records matching text and filters.',
    when: 'Narrow the filters rather than raising the limit.',
  },
  { key: 'list', title: 'List', readOnly: true, idempotent: true, destructive: false, what: 'Lists $e records from $s in a stable order.', when: 'Archived records are left out unless asked for.' },
  {
    key: 'create',
    title: 'Create',
    readOnly: false,
    idempotent: false,
    destructive: false,
    what: 'Creates a $e in $s and returns the stored record.',
    when: 'Confirm with the user first: retries create duplicates.',
  },
  { key: 'update', title: 'Update', readOnly: false, idempotent: true, destructive: true, what: 'Updates the given fields of a $e in $s.', when: 'Omitted fields are kept; every change is audited.' },
  {
    key: 'export',
    title: 'Export',
    readOnly: true,
    idempotent: true,
    destructive: false,
    what: 'Exports $e records from $s as a table of the selected columns.',
    when: 'Output is truncated at the limit.',
  },
  {
    key: 'summarize',
    title: 'Summarize',
    readOnly: true,
    idempotent: true,
    destructive: false,
    what: 'Summarizes recent changes and open follow-ups of a $e in $s.',
    when: 'Useful before a meeting or handover.',
  },
  {
    key: 'approve',
    title: 'Approve',
    readOnly: false,
    idempotent: true,
    destructive: false,
    what: 'Records an approval of a $e in $s for the calling user.',
    when: 'Requires the approver role; cannot be undone.',
  },
];

const REGIONS = ['emea', 'americas', 'apac', 'global'];
const CURRENCIES = ['EUR', 'USD', 'KRW', 'JPY', 'GBP'];
const LOCALES = ['en-US', 'de-DE', 'ko-KR', 'ja-JP', 'fr-FR'];

/** mulberry32: tiny deterministic PRNG, so schema variety is reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(items: readonly T[], index: number): T {
  const item = items[index % items.length];
  if (item === undefined) throw new Error('pick from empty list');
  return item;
}

function camel(snake: string): string {
  return snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

function words(snake: string): string {
  return snake.replace(/_/g, ' ');
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** Optional properties a tool may carry besides its fixed core. */
function optionalProperties(): Array<[string, JsonSchema]> {
  return [
    ['limit', { type: 'integer', minimum: 1, maximum: 200, default: 25 }],
    ['includeArchived', { type: 'boolean', default: false }],
    ['currency', { type: 'string', enum: CURRENCIES }],
    ['locale', { type: 'string', enum: LOCALES }],
    ['ownerEmail', { type: 'string', format: 'email' }],
    ['notes', { type: 'string', description: 'Audit comment.', maxLength: 2000 }],
  ];
}

/** The nested-object property, rotating between three realistic shapes. */
function objectProperty(d: Domain, variant: number): [string, JsonSchema] {
  switch (variant % 3) {
    case 0:
      return [
        'dateRange',
        {
          type: 'object',
          properties: {
            from: { type: 'string', format: 'date' },
            to: { type: 'string', format: 'date' },
          },
          required: ['from'],
        },
      ];
    case 1:
      return [
        'filters',
        {
          type: 'object',
          properties: {
            region: { type: 'string', enum: REGIONS },
            tags: { type: 'array', items: { type: 'string' } },
          },
        },
      ];
    default:
      return [
        'sort',
        {
          type: 'object',
          properties: {
            field: { type: 'string', enum: d.fields },
            direction: { type: 'string', enum: ['asc', 'desc'] },
          },
          required: ['field'],
        },
      ];
  }
}

/** The array property: either plain field names or an array of objects. */
function arrayProperty(d: Domain, variant: number): [string, JsonSchema] {
  if (variant % 2 === 0) {
    return [
      'fields',
      {
        type: 'array',
        items: { type: 'string', enum: d.fields },
      },
    ];
  }
  return [
    'lineItems',
    {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          code: { type: 'string' },
          quantity: { type: 'integer', minimum: 1 },
        },
        required: ['code', 'quantity'],
      },
      minItems: 1,
    },
  ];
}

function buildTool(i: number): ManifestTool {
  const d = pick(DOMAINS, i);
  const entity = pick(d.entities, Math.floor(i / DOMAINS.length));
  const verb = pick(VERBS, i * 3 + Math.floor(i / DOMAINS.length));
  const name = `${d.key}_${verb.key}_${entity}_${pad2(i)}`;
  const rand = prng(0x9e3779b9 ^ (i * 2654435761));

  // Core: identifier or query (required), a status enum, and a nested object
  // and/or an array — so the catalog exercises enums, nesting, arrays and
  // `required` in the validator.
  const props: Array<[string, JsonSchema]> = [];
  const required: string[] = [];
  const idKey = `${camel(entity)}Id`;
  if (verb.key === 'search' || verb.key === 'list' || verb.key === 'export') {
    props.push(['query', { type: 'string', minLength: 1 }]);
  } else {
    props.push([idKey, { type: 'string', minLength: 3 }]);
  }
  required.push(pick(props, 0)[0]);
  props.push(['status', { type: 'string', enum: d.statuses }]);
  // Every third tool (tool 0 included, which quick.ts calls) carries both a
  // nested object and an array; the others one of the two, alternating.
  const wide = i % 3 === 0;
  if (wide || i % 2 === 0) props.push(objectProperty(d, i + Math.floor(rand() * 3)));
  if (wide || i % 2 === 1) props.push(arrayProperty(d, i + Math.floor(rand() * 2)));
  if (verb.key === 'create' || verb.key === 'approve') required.push('status');

  // Extra optional properties up to 8 in total, at least 4; skewed towards
  // few (most real tools are small, a few are wide).
  const extras = optionalProperties();
  const minExtra = 4 - props.length;
  const extraCount = minExtra + Math.floor(rand() ** 3 * (9 - props.length - minExtra));
  const start = Math.floor(rand() * extras.length);
  for (let k = 0; k < extraCount; k++) props.push(pick(extras, start + k));

  return {
    name,
    version: '1.0.0',
    active: true,
    title: `${verb.title} ${words(entity)} #${i}`,
    description: `${verb.what} ${verb.when}`.replace(/\$e/g, words(entity)).replace(/\$s/g, d.system),
    inputSchema: {
      type: 'object',
      properties: Object.fromEntries(props),
      required,
      additionalProperties: false,
    },
    // Hints as real services write them: readers say only that they read;
    // writers state the hints whose MCP defaults would be wrong for them.
    annotations: verb.readOnly ? { readOnlyHint: true } : { destructiveHint: verb.destructive, idempotentHint: verb.idempotent },
    timeoutMs: 5000,
    execution: { path: `/tools/${name}` },
  };
}

/**
 * Generates a deterministic Tool Service manifest (SPEC §7) with `toolCount`
 * realistic tools. Tool names (e.g. `crm_lookup_customer_00`) depend only on
 * the tool index, never on `serviceId`, so a gateway fronting this manifest
 * and the bare baseline serve byte-identical tool lists. Every tool executes
 * at `/tools/<name>` on the service's own origin.
 */
export function generateManifest(toolCount: number, opts: ManifestOptions): Manifest {
  if (!Number.isInteger(toolCount) || toolCount < 0) throw new RangeError(`toolCount must be a non-negative integer, got ${toolCount}`);
  const start = opts.startIndex ?? 0;
  const tools: ManifestTool[] = [];
  for (let i = 0; i < toolCount; i++) tools.push(buildTool(start + i));
  return { service: opts.serviceId, tools };
}

/**
 * The MCP `tools/list` result a gateway is expected to produce for a
 * manifest: `{tools: [{name, title, description, inputSchema, annotations}]}`
 * (the generated tools have no `outputSchema`). Used for the bare baseline.
 */
export function toolsListResult(manifest: Manifest): { tools: Array<Pick<ManifestTool, 'name' | 'title' | 'description' | 'inputSchema' | 'annotations'>> } {
  return {
    tools: manifest.tools.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.inputSchema,
      annotations: t.annotations,
    })),
  };
}

/**
 * Builds arguments that satisfy `schema`, filling every declared property
 * (not only required ones) so a `tools/call` exercises the whole validator.
 */
export function sampleArguments(schema: JsonSchema): unknown {
  if (schema.enum !== undefined && schema.enum.length > 0) return schema.enum[0];
  switch (schema.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, sub] of Object.entries(schema.properties ?? {})) out[key] = sampleArguments(sub);
      return out;
    }
    case 'array': {
      // One item satisfies minItems ≤ 1 and uniqueItems; the generator never
      // emits minItems > 1.
      return schema.items === undefined ? [] : [sampleArguments(schema.items)];
    }
    case 'string': {
      if (schema.format === 'date') return '2026-01-15';
      if (schema.format === 'email') return 'alex.kim@example.com';
      const len = Math.min(Math.max(schema.minLength ?? 1, 8), schema.maxLength ?? 8);
      return 'ACME-0042-XYZ'.slice(0, len).padEnd(len, 'x');
    }
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    default:
      return null;
  }
}

/** Size in bytes of the `tools/list` result JSON for `toolCount` tools. */
export function toolsListResultBytes(toolCount: number): number {
  return Buffer.byteLength(JSON.stringify(toolsListResult(generateManifest(toolCount, { serviceId: 'size' }))));
}

// Direct run: print sizes so the catalog can be tuned (target 34–40 KB at 50).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const n of [1, 10, 50, 128]) {
    const bytes = toolsListResultBytes(n);
    console.log(`tools/list result, ${n} tools: ${bytes} bytes (${(bytes / 1024).toFixed(1)} KiB)`);
  }
  const m = generateManifest(50, { serviceId: 'size' });
  const props = m.tools.map((t) => Object.keys(t.inputSchema.properties ?? {}).length);
  console.log(`properties per tool: min ${Math.min(...props)}, max ${Math.max(...props)}; first tool ${m.tools[0]?.name}`);
}
