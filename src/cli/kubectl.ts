#!/usr/bin/env node
// The kubectl plugin: kubectl runs `kubectl-mvproxy` from PATH for
// `kubectl mvproxy VERB ...` (kubectl's plugin mechanism), which is
// `mvproxy admin VERB ...`: status, explain, drain, undrain, config.
import { runMain } from '../util/commandLine.js';
import { runAdmin } from './admin.js';

runMain('kubectl mvproxy', () => runAdmin(process.argv.slice(2), 'kubectl mvproxy'));
