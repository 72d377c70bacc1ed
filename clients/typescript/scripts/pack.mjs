// `npm pack` / `npm publish` around the manifest: `strip` (prepack) keeps a copy of
// package.json and writes it without the scripts a consumer never runs (`prepare` builds a
// checkout's dist/ on `npm ci`, and npm warns about it in an installed package) nor the
// devDependencies; `restore` (postpack) puts the copy back.
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";

const manifest = new URL("../package.json", import.meta.url);
const kept = new URL("../package.json.pack-orig", import.meta.url);
const step = process.argv[2];
if (step === "strip") {
  if (!existsSync(kept)) copyFileSync(manifest, kept);
  const pkg = JSON.parse(readFileSync(kept, "utf-8"));
  delete pkg.scripts;
  delete pkg.devDependencies;
  writeFileSync(manifest, JSON.stringify(pkg, null, 2) + "\n");
} else if (step === "restore") {
  if (existsSync(kept)) renameSync(kept, manifest);
} else {
  throw new Error("usage: node scripts/pack.mjs strip|restore");
}
