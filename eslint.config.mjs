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
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    // A CommonJS entry point loads the TypeScript sources with require() by design.
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  prettier,
);
