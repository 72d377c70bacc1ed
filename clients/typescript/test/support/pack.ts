/** The package packed as a consumer gets it: `npm pack` run on a copy of this folder (its
 * `prepack` builds and strips the manifest, `postpack` restores it: the checkout is never
 * touched, so tests running beside this one see it as it is). */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE } from "./server.js";

/** Pack a copy of the package into `work`; the tarball's path. */
export function pack(work: string): string {
  const copy = join(work, "package");
  cpSync(PACKAGE, copy, { recursive: true, filter: (src) => !/[/\\](node_modules|dist)$/.test(src) && !src.endsWith(".tgz") });
  symlinkSync(join(PACKAGE, "node_modules"), join(copy, "node_modules"), "dir");
  const name = execFileSync("npm", ["pack", "--pack-destination", work, "--loglevel=error"], { cwd: copy, encoding: "utf-8" }).trim().split("\n").at(-1)!;
  // postpack put the manifest back as it was
  assert.equal(readFileSync(join(copy, "package.json"), "utf-8"), readFileSync(join(PACKAGE, "package.json"), "utf-8"));
  return join(work, name);
}
