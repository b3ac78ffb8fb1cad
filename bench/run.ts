/**
 * Full benchmark (`npm run bench`, ≤ 8 min with the defaults on a 2-core
 * machine): the gateway against the bare uWS server, the echo Tool Service,
 * the inline single-threaded gateway and the MCP SDK's stateless server
 * measured in the same run, on tools/list (5 and 50 tools), tools/call,
 * initialize, a mixed Agent-Builder-like load and tools/list under
 * continuous catalog refresh. Writes bench/results/<date>.md and .json
 * and docs/bench/latest.svg, and prints the targets check.
 *
 * `--sweep` instead compares tools/list and tools/call over several
 * `workers.acceptors` × `workers.shards` combos (bench/results/<date>-sweep.*).
 * `--node PATH` runs the servers on another Node binary; `--compare-node
 * PATH` also runs the gateway (and the inline gateway) on a second one.
 * `--help` lists the knobs. See bench/suite.ts for the method.
 */
import { runCli } from './suite.js';

await runCli(process.argv.slice(2), 'full');
