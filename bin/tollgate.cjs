#!/usr/bin/env node
// The `tollgate` command, runnable from any folder once the project is installed (npm link, or npx).
require('tsx/cjs/api').register();
require('../client/cli.ts');
