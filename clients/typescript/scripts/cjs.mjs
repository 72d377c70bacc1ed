// Marks dist/cjs as CommonJS (the package is "type": "module"): Node loads its .js files with
// require(), and TypeScript reads its declarations as CommonJS ones.
import { writeFileSync } from "node:fs";
writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), '{ "type": "commonjs" }\n');
