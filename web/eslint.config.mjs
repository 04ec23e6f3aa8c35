// ESLint for the report page's scripts (browser globals, one shared scope: the page inlines them
// as classic scripts) and the browser tests (Node ES modules). `make lint` runs it.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/"] },
  js.configs.recommended,
  {
    files: ["*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "script", globals: { ...globals.browser, Chart: "readonly" } },
    rules: { "no-unused-vars": ["error", { vars: "local", args: "none" }] },
  },
  {
    files: ["test/*.mjs", "*.mjs"],
    // page.evaluate() callbacks run in the page: its globals too.
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.node, ...globals.browser, CT: "readonly", Chart: "readonly" } },
    rules: { "no-unused-vars": ["error", { args: "none" }] },
  },
];
