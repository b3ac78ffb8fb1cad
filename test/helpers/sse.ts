/**
 * The one SSE parser of the tests (docs/contracts/streaming-v0.3.md §2): a
 * complete or partial `text/event-stream` body → its events and comments in
 * arrival order, keeping what a contract check needs (the field names of
 * each event, the raw comment line) and the unterminated tail. Lines end
 * with `\n` only, as the contract says: a `\r\n` stream does not parse into
 * complete blocks, so a test of it fails rather than passing by tolerance.
 */

/** One SSE event: its `event` (default `message`), `data` lines joined by `\n`, `id` when sent, and every field name in order. */
export interface SseEvent {
  kind: 'event';
  event: string;
  data: string;
  id?: string;
  fields: string[];
}

/** One SSE comment: `line` as received (`: keep-alive`), `text` without the colon and surrounding blanks. */
export interface SseComment {
  kind: 'comment';
  text: string;
  line: string;
}

/** An event or a comment, in arrival order. */
export type SseItem = SseEvent | SseComment;

/** A parsed body: the complete blocks, and what follows the last blank line (`''` when the body ends with a complete block). */
export interface SseParse {
  items: SseItem[];
  tail: string;
}

/** Parses the complete SSE blocks (separated by a blank line) of `text`; an unterminated tail is returned, not parsed. */
export function parseSse(text: string): SseParse {
  const items: SseItem[] = [];
  const blocks = text.split('\n\n');
  const tail = blocks.pop() ?? '';
  for (const block of blocks) {
    if (block === '') continue;
    let event = 'message';
    const data: string[] = [];
    const fields: string[] = [];
    let id: string | undefined;
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        items.push({ kind: 'comment', text: line.slice(1).trim(), line });
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      fields.push(field);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
    if (fields.length > 0) items.push({ kind: 'event', event, data: data.join('\n'), ...(id !== undefined ? { id } : {}), fields });
  }
  return { items, tail };
}

/** The events of `items`. */
export function sseEvents(items: readonly SseItem[]): SseEvent[] {
  return items.filter((i): i is SseEvent => i.kind === 'event');
}

/** The events' `data` parsed as JSON (the JSON-RPC messages of an MCP stream). */
export function sseMessages(items: readonly SseItem[]): Array<Record<string, unknown>> {
  return sseEvents(items).map((e) => JSON.parse(e.data) as Record<string, unknown>);
}
