/**
 * Quick bench (`npm run bench:quick`, < 60 s with the defaults): the same
 * suite as `npm run bench` (bench/suite.ts), reduced to tools/list on 50
 * tools against the bare uWS server and tools/call against the echo Tool
 * Service called directly, one repeat of 4 s, nothing written to disk.
 * Accepts the same flags and BENCH_* variables (e.g. `--only list5,mixed`,
 * `--repeats 2`); `--help` lists them.
 */
import { runCli } from './suite.js';

await runCli(process.argv.slice(2), 'quick');
