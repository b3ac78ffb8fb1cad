/**
 * The most common Tool Service answer, a `CallToolResult` of text blocks,
 * recognised by one regular expression instead of `JSON.parse`:
 *
 *   {"content":[{"type":"text","text":"…"},…]}   and optionally "isError": true | false
 *
 * (text blocks with exactly those two members, in either order). Parsing
 * such an answer only to check its shape built its whole object graph,
 * internalised its keys and dropped it again (ADR-0024).
 *
 * This is a strict subset of what `JSON.parse` + `CallToolResultSchema`
 * accept, so a match is a valid result by construction: members and block
 * members named without escapes and at most once, strings checked as JSON
 * does (no raw control character, only the escapes JSON has), whitespace
 * only where JSON allows it, nothing after the closing brace. Anything else
 * — another member (`structuredContent`, `_meta`, `resultType`), another
 * block type, a duplicate, a key written with escapes, invalid JSON — is
 * {@link TextResultScan.NotText}, and the caller parses and checks the
 * answer as before (upstream-exchange.ts), so the subset refuses nothing.
 * The client receives the Tool Service's bytes either way.
 */

/** What {@link scanTextResult} found. */
export const enum TextResultScan {
  /** Not in the subset: parse and check the answer. */
  NotText = 0,
  /** A text-block result without `"isError": true`. */
  Ok = 1,
  /** A text-block result with `"isError": true`. */
  IsError = 2,
}

/*
 * Linear time on any input (the answer comes from outside): the expression is
 * unambiguous — every alternation is decided by its first characters
 * (`"content"` / `"isError"`, `"type"` / `"text"`, an escape / any other string
 * character), and no two whitespace runs are adjacent — so a failing match
 * backtracks over each character a bounded number of times. Measured: hostile
 * shapes (long whitespace runs, unterminated strings, thousands of blocks
 * then junk) take time proportional to their length, ~3–14 ms per MB.
 * irregexp keeps a backtrack entry per repetition: past ~16 M characters
 * it throws a RangeError, and such an answer is parsed instead.
 */
const WS = '[ \\t\\n\\r]*';
const STRING = '"(?:[^"\\\\\\u0000-\\u001f]|\\\\["\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})*"';
const BLOCK = `\\{${WS}(?:"type"${WS}:${WS}"text"${WS},${WS}"text"${WS}:${WS}${STRING}|"text"${WS}:${WS}${STRING}${WS},${WS}"type"${WS}:${WS}"text")${WS}\\}`;
const CONTENT = `"content"${WS}:${WS}\\[${WS}(?:${BLOCK}${WS}(?:,${WS}${BLOCK}${WS})*)?\\]`;
const IS_ERROR = `"isError"${WS}:${WS}(true|false)`;
/** Group 1: `isError` after `content`; group 2: before it. */
const TEXT_RESULT = new RegExp(`^${WS}\\{${WS}(?:${CONTENT}${WS}(?:,${WS}${IS_ERROR}${WS})?|${IS_ERROR}${WS},${WS}${CONTENT}${WS})\\}${WS}$`);

/**
 * Whether `text` (a Tool Service's whole `200 application/json` body) is a
 * text-block `CallToolResult` of the subset (see the file comment), and if so
 * whether it says `"isError": true`.
 */
export function scanTextResult(text: string): TextResultScan {
  let match: RegExpExecArray | null;
  try {
    match = TEXT_RESULT.exec(text);
  } catch (err) {
    if (err instanceof RangeError) return TextResultScan.NotText; // past the engine's backtrack stack (above)
    throw err;
  }
  if (match === null) return TextResultScan.NotText;
  return (match[1] ?? match[2]) === 'true' ? TextResultScan.IsError : TextResultScan.Ok;
}
