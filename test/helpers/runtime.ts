/**
 * Which uWebSockets.js build and Node a test run must be on, so CI cannot
 * silently test the legacy build twice: derived from the runtime (glibc and
 * Node ABI decide which build can load natively), and pinned exactly by
 * `.ci/run` for its modern pass through `MCP_TEST_EXPECT_NODE` (major) and
 * `MCP_TEST_EXPECT_UWS` (package release, e.g. `@btc-vision/uwebsockets.js@20.57.0`).
 */

/** Node ABIs with a binary in @btc-vision/uwebsockets.js@20.57.0 (Node 20, 22, 24, 25). */
const SUPPORTED_BUILD_ABIS = new Set(['115', '127', '137', '141']);

/** glibc of this process, e.g. `2.36`; `null` without glibc. */
export function glibcVersion(): string | null {
  const header = (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header;
  return header.glibcVersionRuntime ?? null;
}

/** The dependency name of the build the loader must pick on this runtime. */
export function expectedUwsPackage(): string {
  const glibc = glibcVersion();
  const [major = 0, minor = 0] = (glibc ?? '0.0').split('.').map(Number);
  const newEnough = major > 2 || (major === 2 && minor >= 38);
  return newEnough && SUPPORTED_BUILD_ABIS.has(process.versions.modules) ? 'uWebSockets.js' : 'uWebSockets.js-legacy';
}

/** `MCP_TEST_EXPECT_NODE` / `MCP_TEST_EXPECT_UWS` when the run pins them (CI's modern pass), else `null`. */
export function pinnedRuntime(): { nodeMajor: string | null; uwsRelease: string | null } {
  return { nodeMajor: process.env['MCP_TEST_EXPECT_NODE'] || null, uwsRelease: process.env['MCP_TEST_EXPECT_UWS'] || null };
}
