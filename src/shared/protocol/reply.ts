/**
 * A transport-neutral HTTP answer: what the protocol core returns and the
 * uWS writer sends. Keeping it plain lets the core be tested with bytes in,
 * bytes out.
 */
import { Buffer } from 'node:buffer';

/** HTTP status lines the gateway emits, precomputed once (uWS takes the whole line). */
export const STATUS_LINE: Readonly<Record<number, string>> = Object.freeze({
  200: '200 OK',
  202: '202 Accepted',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  406: '406 Not Acceptable',
  413: '413 Content Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  501: '501 Not Implemented',
  503: '503 Service Unavailable',
});

/** One HTTP answer. `body` bytes must not be retained by the writer after sending. */
export interface Reply {
  status: number;
  /** Extra headers besides content-type. */
  headers?: ReadonlyArray<readonly [string, string]>;
  contentType?: string;
  body: string | Uint8Array;
  /** Appended after `body` (a `tools/list` snapshot template is completed by `<id>}`). */
  bodyTail?: string;
}

export const JSON_CONTENT_TYPE = 'application/json';

/** The status line for a code, falling back to a generic one for codes not in the table. */
export function statusLine(status: number): string {
  return STATUS_LINE[status] ?? `${status} Unknown`;
}

/** The whole body of a reply as text (tests and logs; the writer never joins strings). */
export function replyText(reply: Reply): string {
  const head = typeof reply.body === 'string' ? reply.body : Buffer.from(reply.body).toString('utf8');
  return head + (reply.bodyTail ?? '');
}
