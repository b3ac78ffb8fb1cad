/**
 * Incremental, byte-level HTTP/1.1 response parser (RFC 9112), strict where
 * leniency lets a peer smuggle or desynchronise a response:
 *
 * - status line `HTTP/1.x NNN reason`; only HTTP/1.0 and 1.1; status 100–599;
 *   lines end in CRLF (a bare LF or CR is refused, §2.2);
 * - field lines: a token name directly followed by `:` (no whitespace, §5.1),
 *   a value of visible bytes, SP, HTAB and obs-text; obs-fold (a line starting
 *   with whitespace, §5.2) and control bytes are refused; the whole head is
 *   bounded by `maxHeaderBytes`;
 * - framing (§6): `Transfer-Encoding` must be exactly `chunked` (any other
 *   coding, a list, or two such fields is refused), `Transfer-Encoding`
 *   together with `Content-Length` is refused, `Content-Length` must be one
 *   decimal value (identical repeats allowed, differing repeats or a list
 *   refused); neither → the body runs to the end of the connection;
 *   204 and 304 have no body;
 * - chunked bodies: hex chunk sizes (overflow past 2^53 refused), extensions
 *   checked for syntax (tokens, `=`, quoted strings) and ignored, a trailer
 *   section consumed under the same size bound and ignored;
 * - 1xx interim responses (100 Continue, 103 Early Hints) are skipped; 101 is
 *   refused (this client never asks to switch protocols);
 * - `Connection: close`, HTTP/1.0 without `keep-alive`, and read-until-close
 *   bodies mark the connection as not reusable; `Keep-Alive: timeout=N` is
 *   reported for the pool's reuse decision.
 *
 * The parser never looks at bytes past a complete response: `execute` returns
 * where the response ended and the connection decides (a connection with no
 * request outstanding that receives bytes is discarded, never parsed again).
 * Body bytes are handed out as views of the caller's buffer, no copy.
 *
 * Longer than most modules on purpose (~560 lines): it is one state machine (`State` for
 * the message, `H` inside a head), whose states only make sense together;
 * the framing decision from a complete head lives in framing.ts.
 */
import type { Buffer } from 'node:buffer';
import { copyBytes } from '../../../shared/threads/buffer-text.js';
import { Http1FailureCode, type ParseError } from './errors.js';
import { decideFraming } from './framing.js';
import { ResponseHead } from './response-head.js';

/** Receives one response. Body views are valid only during the call. */
export interface ParserSink {
  /** The final (non-1xx) response head; the head object is valid only during the call. */
  onHead(head: ResponseHead): void;
  /** Body bytes `chunk[start, end)` (chunked framing already removed). */
  onBody(chunk: Buffer, start: number, end: number): void;
  /** The response is complete. */
  onComplete(): void;
}

const enum State {
  /** No response expected. */
  Idle,
  /** Status line and field lines (also 1xx heads and the trailer section). */
  Head,
  BodyLength,
  ChunkSize,
  ChunkSizeBws,
  ChunkExt,
  ChunkExtQuoted,
  ChunkExtQuotedPair,
  ChunkSizeLf,
  ChunkData,
  ChunkDataCr,
  ChunkDataLf,
  BodyUntilClose,
  Done,
  Failed,
  /** The sink stopped the response (abort) during a callback. */
  Halted,
}

const enum H {
  Version,
  Status,
  AfterStatus,
  Reason,
  ReasonLf,
  LineStart,
  Name,
  ValueOws,
  Value,
  ValueLf,
  EndLf,
}

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;
const VERSION_PREFIX = 'HTTP/1.';
/** Largest chunk size before the next hex digit could pass Number.MAX_SAFE_INTEGER. */
const MAX_CHUNK_BEFORE_DIGIT = Math.floor((Number.MAX_SAFE_INTEGER - 15) / 16);

/** Byte classes: 1 = tchar (RFC 9110 §5.6.2), 2 = field-vchar or obs-text. */
const CLASS = new Uint8Array(256);
for (let b = 0x21; b <= 0x7e; b++) CLASS[b] = 2;
for (let b = 0x80; b <= 0xff; b++) CLASS[b] = 2;
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") CLASS[c.charCodeAt(0)] = 3;
const isTchar = (b: number): boolean => ((CLASS[b] as number) & 1) !== 0;
const isVchar = (b: number): boolean => ((CLASS[b] as number) & 2) !== 0;

function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  const l = b | 0x20;
  if (l >= 0x61 && l <= 0x66) return l - 0x61 + 10;
  return -1;
}

/** Parses responses one at a time on one connection. */
export class ResponseParser {
  readonly head: ResponseHead;
  /** Set when `execute` stopped on a framing or syntax error. */
  error: ParseError | null = null;
  private state = State.Idle;
  private h = H.Version;
  private sink: ParserSink | null = null;
  /** Bytes of the current head (or trailer section) copied into head.bytes. */
  private headLen = 0;
  /** Position inside the version prefix, or digits of the status code read. */
  private hpos = 0;
  private inTrailers = false;
  /** Remaining bytes of a Content-Length body or of the current chunk. */
  private remaining = 0;
  private chunkDigits = 0;
  /** Bytes of the current chunk-size line (size and extensions), bounded like a head. */
  private chunkLineBytes = 0;

  constructor(private readonly maxHeaderBytes: number) {
    this.head = new ResponseHead(maxHeaderBytes);
  }

  /** A request was sent: the next bytes are its response, delivered to `sink`. */
  expect(sink: ParserSink): void {
    this.sink = sink;
    this.error = null;
    this.startHead(false);
  }

  /** True while a response is expected and not yet complete. */
  get inProgress(): boolean {
    return this.state !== State.Idle && this.state !== State.Done && this.state !== State.Failed && this.state !== State.Halted;
  }

  /** Stops delivering: called when the handler aborts or the connection fails mid-response. */
  halt(): void {
    if (this.inProgress) this.state = State.Halted;
    this.sink = null;
  }

  /** Back to idle after a completed response (the connection will be reused). */
  idle(): void {
    this.state = State.Idle;
    this.sink = null;
  }

  /**
   * The server closed the connection. Completes a read-until-close body and
   * returns true; false when a response was cut short.
   */
  eof(): boolean {
    if (this.state !== State.BodyUntilClose) return !this.inProgress;
    this.complete();
    return true;
  }

  /**
   * Consumes `buf[start, end)`. Returns the index after the last byte that
   * belongs to the response, stopping early when the response completes or
   * the sink halts it; returns -1 when the bytes are invalid (`error` says why).
   */
  execute(buf: Buffer, start: number, end: number): number {
    let i = start;
    while (i < end) {
      switch (this.state) {
        case State.Head:
          i = this.scanHead(buf, i, end);
          break;
        case State.BodyLength:
        case State.ChunkData: {
          const n = Math.min(this.remaining, end - i);
          this.remaining -= n;
          (this.sink as ParserSink).onBody(buf, i, i + n);
          i += n;
          if (this.stopped()) return i;
          if (this.remaining === 0) {
            if (this.state === State.BodyLength) this.complete();
            else this.state = State.ChunkDataCr;
          }
          break;
        }
        case State.BodyUntilClose:
          (this.sink as ParserSink).onBody(buf, i, end);
          return end;
        case State.ChunkSize:
        case State.ChunkSizeBws:
        case State.ChunkExt:
        case State.ChunkExtQuoted:
        case State.ChunkExtQuotedPair:
        case State.ChunkSizeLf:
          i = this.scanChunkLine(buf, i, end);
          break;
        case State.ChunkDataCr:
          if (buf[i++] !== CR) return this.fail('chunk data is longer than its chunk size');
          this.state = State.ChunkDataLf;
          break;
        case State.ChunkDataLf:
          if (buf[i++] !== LF) return this.fail('chunk data is not followed by CRLF');
          this.state = State.ChunkSize;
          this.remaining = 0;
          this.chunkDigits = 0;
          this.chunkLineBytes = 0;
          break;
        default:
          // Idle, Done, Failed, Halted: these bytes are not part of the response.
          return i;
      }
      if (this.stopped()) return i;
    }
    return i;
  }

  /** The loop must stop: failed, halted by the sink, or the response is complete. */
  private stopped(): boolean {
    const s = this.state;
    return s === State.Failed || s === State.Halted || s === State.Done;
  }

  private startHead(trailers: boolean): void {
    this.state = State.Head;
    this.h = trailers ? H.LineStart : H.Version;
    this.inTrailers = trailers;
    this.headLen = 0;
    this.hpos = 0;
    const head = this.head;
    if (!trailers) {
      head.status = 0;
      head.fieldCount = 0;
    }
  }

  private fail(message: string, code: ParseError['code'] = Http1FailureCode.BadResponse): number {
    this.state = State.Failed;
    this.error = { code, message };
    this.sink = null;
    return -1;
  }

  private complete(): void {
    this.state = State.Done;
    const sink = this.sink as ParserSink;
    sink.onComplete();
  }

  /** Records the start of a field line's name at head offset `at`. */
  private beginField(at: number): void {
    const head = this.head;
    let fields = head.fields;
    if (4 * head.fieldCount + 4 > fields.length) {
      fields = new Int32Array(fields.length * 2);
      fields.set(head.fields);
      head.fields = fields;
    }
    fields[4 * head.fieldCount] = at;
  }

  /**
   * The common case of a status line in one pass: all of it, through its LF,
   * is in [i, stop) and every byte is valid. Sets the version and status and
   * returns the index of the LF; -1 otherwise, and the state machine reads the
   * line byte by byte (and words the error, if there is one). A head's lines
   * in one pass each cost half the instructions of the byte-by-byte states
   * (`bench/instructions.ts`).
   */
  private wholeStatusLine(buf: Buffer, i: number, stop: number): number {
    if (stop - i < 14) return -1; // "HTTP/1.1 200\r\n"
    for (let k = 0; k < VERSION_PREFIX.length; k++) if (buf[i + k] !== VERSION_PREFIX.charCodeAt(k)) return -1;
    const minor = (buf[i + 7] as number) - 0x30;
    if ((minor !== 0 && minor !== 1) || buf[i + 8] !== SP) return -1;
    let status = 0;
    for (let k = i + 9; k < i + 12; k++) {
      const d = (buf[k] as number) - 0x30;
      if (d < 0 || d > 9) return -1;
      status = status * 10 + d;
    }
    if (status < 100 || status > 599) return -1;
    let j = i + 12;
    if (buf[j] === SP) {
      for (j++; j < stop; j++) {
        const c = buf[j] as number;
        if (c === CR) break;
        if (c !== SP && c !== HTAB && !isVchar(c)) return -1;
      }
    }
    if (j + 1 >= stop || buf[j] !== CR || buf[j + 1] !== LF) return -1;
    this.head.minorVersion = minor;
    this.head.status = status;
    this.h = H.LineStart;
    return j + 1;
  }

  /**
   * A whole field line (`name:` OWS value OWS CRLF) starting at `i` in one
   * pass, on the same terms as {@link wholeStatusLine}: records the field and
   * returns the index of its LF, or -1.
   */
  private wholeFieldLine(buf: Buffer, i: number, stop: number, base: number): number {
    let j = i + 1;
    while (j < stop && isTchar(buf[j] as number)) j++;
    if (j >= stop || buf[j] !== 0x3a) return -1;
    const nameEnd = j;
    for (j++; j < stop && (buf[j] === SP || buf[j] === HTAB); j++);
    const valueStart = j;
    let valueEnd = j; // after the last visible byte: trailing OWS is not in the value
    for (; j < stop; j++) {
      const c = buf[j] as number;
      if (c === CR) break;
      if (isVchar(c)) valueEnd = j + 1;
      else if (c !== SP && c !== HTAB) return -1;
    }
    if (j + 1 >= stop || buf[j + 1] !== LF) return -1;
    this.beginField(base + i);
    const head = this.head;
    const at = 4 * head.fieldCount;
    head.fields[at + 1] = base + nameEnd;
    head.fields[at + 2] = base + valueStart;
    head.fields[at + 3] = base + valueEnd;
    head.fieldCount++;
    return j + 1;
  }

  /** Status line and field lines; copies the bytes it consumes into head.bytes. */
  private scanHead(buf: Buffer, start: number, end: number): number {
    const head = this.head;
    // head.bytes offset of buf[i] is base + i.
    const base = this.headLen - start;
    const room = this.maxHeaderBytes - this.headLen;
    const stop = Math.min(end, start + room);
    let i = start;
    let finished = false;
    for (; i < stop && !finished; i++) {
      const b = buf[i] as number;
      switch (this.h) {
        case H.Version:
          if (this.hpos === 0) {
            const lf = this.wholeStatusLine(buf, i, stop);
            if (lf >= 0) {
              i = lf; // the loop's i++ moves past the LF
              break;
            }
          }
          if (this.hpos < VERSION_PREFIX.length) {
            if (b !== VERSION_PREFIX.charCodeAt(this.hpos)) return this.fail('the status line does not start with HTTP/1.');
            this.hpos++;
          } else if (this.hpos === VERSION_PREFIX.length) {
            if (b !== 0x30 && b !== 0x31) return this.fail('unsupported HTTP version (only HTTP/1.0 and HTTP/1.1)');
            head.minorVersion = b - 0x30;
            this.hpos++;
          } else {
            if (b !== SP) return this.fail('no space after the HTTP version');
            this.h = H.Status;
            this.hpos = 0;
            head.status = 0;
          }
          break;
        case H.Status:
          if (b < 0x30 || b > 0x39) return this.fail('the status code is not three digits');
          head.status = head.status * 10 + (b - 0x30);
          if (++this.hpos === 3) {
            if (head.status < 100 || head.status > 599) return this.fail(`status code ${head.status} is out of range`);
            this.h = H.AfterStatus;
          }
          break;
        case H.AfterStatus:
          // RFC 9112 §4 wants "SP [reason]"; a missing SP before CRLF is accepted, as llhttp does.
          if (b === SP) this.h = H.Reason;
          else if (b === CR) this.h = H.ReasonLf;
          else return this.fail('the status code is not three digits');
          break;
        case H.Reason:
          if (b === CR) this.h = H.ReasonLf;
          else if (b !== SP && b !== HTAB && !isVchar(b)) return this.fail('invalid byte in the reason phrase');
          break;
        case H.ReasonLf:
        case H.ValueLf:
          if (b !== LF) return this.fail('a line ends in CR without LF');
          this.h = H.LineStart;
          break;
        case H.LineStart:
          if (b === CR) this.h = H.EndLf;
          else if (b === SP || b === HTAB) return this.fail('obsolete line folding (obs-fold) in a field value');
          else if (isTchar(b)) {
            const lf = this.wholeFieldLine(buf, i, stop, base);
            if (lf >= 0) {
              i = lf; // the loop's i++ moves past the LF; the next line starts there
              break;
            }
            this.beginField(base + i);
            this.h = H.Name;
          } else return this.fail(b === LF ? 'a line ends in LF without CR' : 'invalid byte at the start of a field name');
          break;
        case H.Name: {
          // The rest of the name in one inner pass (names and values are most of a head's bytes).
          let j = i;
          while (j < stop && isTchar(buf[j] as number)) j++;
          i = j - 1; // the loop's i++ moves past the last byte looked at
          if (j === stop) break;
          const c = buf[j] as number;
          if (c !== 0x3a) return this.fail(c === SP || c === HTAB ? 'whitespace between a field name and the colon' : 'invalid byte in a field name');
          head.fields[4 * head.fieldCount + 1] = base + j;
          this.h = H.ValueOws;
          i = j;
          break;
        }
        case H.ValueOws:
          if (b === SP || b === HTAB) break;
          head.fields[4 * head.fieldCount + 2] = base + i;
          head.fields[4 * head.fieldCount + 3] = base + i;
          if (b === CR) {
            head.fieldCount++;
            this.h = H.ValueLf;
          } else if (isVchar(b)) {
            head.fields[4 * head.fieldCount + 3] = base + i + 1;
            this.h = H.Value;
          } else return this.fail('invalid byte in a field value');
          break;
        case H.Value: {
          // Up to the CR in one inner pass; the value ends after its last visible byte (trailing OWS is not in it).
          let j = i;
          let last = -1;
          for (; j < stop; j++) {
            const c = buf[j] as number;
            if (c === CR) break;
            if (isVchar(c)) last = j + 1;
            else if (c !== SP && c !== HTAB) return this.fail(c === LF ? 'a line ends in LF without CR' : 'invalid byte in a field value');
          }
          if (last >= 0) head.fields[4 * head.fieldCount + 3] = base + last;
          i = j - 1;
          if (j === stop) break;
          head.fieldCount++;
          this.h = H.ValueLf;
          i = j;
          break;
        }
        case H.EndLf:
          if (b !== LF) return this.fail('a line ends in CR without LF');
          finished = true;
          break;
      }
    }
    head.ensureCapacity(this.headLen + (i - start), this.maxHeaderBytes);
    copyBytes(buf, start, i, head.bytes, this.headLen);
    this.headLen += i - start;
    if (!finished) {
      if (this.headLen >= this.maxHeaderBytes && i < end) {
        return this.fail(`the response ${this.inTrailers ? 'trailer section' : 'head'} is larger than ${this.maxHeaderBytes} bytes`, Http1FailureCode.HeadersTooLarge);
      }
      return i;
    }
    if (this.inTrailers) {
      this.complete();
      return i;
    }
    return this.headComplete(i);
  }

  /** Decides framing from a complete head and hands it to the sink (or skips a 1xx). */
  private headComplete(i: number): number {
    const head = this.head;
    if (head.status < 200) {
      if (head.status === 101) return this.fail('101 Switching Protocols to a request that asked for no upgrade');
      // Interim response (100 Continue, 103 Early Hints…): skip it, the final one follows.
      this.startHead(false);
      return i;
    }
    const problem = decideFraming(head);
    if (problem !== null) return this.fail(problem);
    if (head.contentLength === 0) {
      this.deliverHead();
      if (this.state === State.Head) this.complete();
      return i;
    }
    if (head.chunked) {
      this.state = State.ChunkSize;
      this.remaining = 0;
      this.chunkDigits = 0;
      this.chunkLineBytes = 0;
    } else if (head.untilClose) {
      this.state = State.BodyUntilClose;
    } else {
      this.state = State.BodyLength;
      this.remaining = head.contentLength;
    }
    this.deliverHead();
    return i;
  }

  /** onHead; the sink may halt the response in it (the state then says Halted). */
  private deliverHead(): void {
    const sink = this.sink as ParserSink;
    sink.onHead(this.head);
  }

  /** `chunk-size [ chunk-ext ] CRLF`, extensions syntax-checked and ignored. */
  private scanChunkLine(buf: Buffer, start: number, end: number): number {
    let i = start;
    for (; i < end; i++) {
      const b = buf[i] as number;
      if (++this.chunkLineBytes > this.maxHeaderBytes) return this.fail(`a chunk-size line is longer than ${this.maxHeaderBytes} bytes`);
      switch (this.state) {
        case State.ChunkSize: {
          const d = hexValue(b);
          if (d >= 0) {
            if (this.remaining > MAX_CHUNK_BEFORE_DIGIT) return this.fail('chunk size overflow');
            this.remaining = this.remaining * 16 + d;
            this.chunkDigits++;
            break;
          }
          if (this.chunkDigits === 0) return this.fail('a chunk does not start with a hexadecimal size');
          if (b === CR) this.state = State.ChunkSizeLf;
          else if (b === 0x3b) this.state = State.ChunkExt;
          else if (b === SP || b === HTAB) this.state = State.ChunkSizeBws;
          else return this.fail('invalid byte after a chunk size');
          break;
        }
        case State.ChunkSizeBws:
          // Whitespace after the size may only lead to an extension or the line end ("5 5" is refused).
          if (b === CR) this.state = State.ChunkSizeLf;
          else if (b === 0x3b) this.state = State.ChunkExt;
          else if (b !== SP && b !== HTAB) return this.fail('invalid byte after a chunk size');
          break;
        case State.ChunkExt:
          // chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )
          if (b === CR) this.state = State.ChunkSizeLf;
          else if (b === 0x22) this.state = State.ChunkExtQuoted;
          else if (!isTchar(b) && b !== 0x3b && b !== 0x3d && b !== SP && b !== HTAB) return this.fail('invalid byte in a chunk extension');
          break;
        case State.ChunkExtQuoted:
          if (b === 0x22) this.state = State.ChunkExt;
          else if (b === 0x5c) this.state = State.ChunkExtQuotedPair;
          else if (b !== SP && b !== HTAB && !isVchar(b)) return this.fail('invalid byte in a quoted chunk extension');
          break;
        case State.ChunkExtQuotedPair:
          if (b !== SP && b !== HTAB && !isVchar(b)) return this.fail('invalid escaped byte in a chunk extension');
          this.state = State.ChunkExtQuoted;
          break;
        case State.ChunkSizeLf:
          if (b !== LF) return this.fail('a chunk-size line ends in CR without LF');
          if (this.remaining === 0) this.startHead(true);
          else this.state = State.ChunkData;
          return i + 1;
      }
    }
    return i;
  }
}
