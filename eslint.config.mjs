// ESLint flat config: the recommended JavaScript and typescript-eslint rules, with Prettier owning the formatting.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['node_modules/', '.tollgate/', 'test-output/', 'coverage/', 'dist/', 'bench/results/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  { languageOptions: { globals: globals.node } },
  {
    files: ['**/*.cjs', 'codec/converters.js'],
    languageOptions: { sourceType: 'commonjs' },
    // CommonJS by design: the entry point loads the TypeScript sources with require(), and Temporal
    // loads the converters by path into the workflow bundle and the worker alike.
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The web inbox's page runs in the browser.
    files: ['client/inbox/public/**/*.js'],
    languageOptions: { globals: globals.browser, sourceType: 'module' },
  },
  prettier,
);
