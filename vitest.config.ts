import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Integration tests start real servers and worker threads; the machine has 2 cores.
    fileParallelism: true,
    maxWorkers: 2,
    pool: 'forks',
  },
});
