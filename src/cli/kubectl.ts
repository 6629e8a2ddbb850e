#!/usr/bin/env node
// The kubectl plugin: kubectl runs `kubectl-mvproxy` from PATH for
// `kubectl mvproxy VERB ...` (kubectl's plugin mechanism), which is
// `mvproxy admin VERB ...`: status, explain, drain, undrain, config.
import { runAdmin } from './admin.js';

runAdmin(process.argv.slice(2), 'kubectl mvproxy').then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`kubectl mvproxy: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
