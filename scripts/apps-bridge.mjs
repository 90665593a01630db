// Bundles the host bridge of `cargo sake dev`'s MCP Apps preview from the pinned npm packages
// (scripts/peers/package.json, installed in $SAKE_NODE_MODULES by scripts/test.sh):
//
//   node scripts/apps-bridge.mjs <output dir>
//
// writes <output dir>/bridge.js (cargo-sake/assets/apps/bridge-entry.mjs and what it imports,
// one minified script setting the global `SakeAppsBridge`) and <output dir>/bridge.LICENSES.txt
// (the licence of each package in it, with its version). scripts/apps-bridge.sh refreshes the
// committed copies in cargo-sake/assets/apps/ with it; cargo-sake/tests/apps.rs runs it and
// fails when they differ. esbuild's output depends only on its version and its inputs.

import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const modules = process.env.SAKE_NODE_MODULES;
if (!modules) {
  console.error('SAKE_NODE_MODULES: the pinned test peers (scripts/test.sh installs them into .tools/)');
  process.exit(2);
}
const out = process.argv[2];
if (!out) {
  console.error('usage: apps-bridge.mjs <output dir>');
  process.exit(2);
}
const require = createRequire(import.meta.url);
const esbuild = require(require.resolve('esbuild', { paths: [modules] }));
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'cargo-sake/assets/apps/bridge-entry.mjs');
const version = (dir) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
const extApps = join(modules, '@modelcontextprotocol/ext-apps');

const result = await esbuild.build({
  entryPoints: [entry],
  bundle: true,
  format: 'iife',
  globalName: 'SakeAppsBridge',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  charset: 'utf8',
  write: false,
  metafile: true,
  nodePaths: [modules],
  absWorkingDir: root,
  logLevel: 'warning',
  banner: {
    js:
      `/* The host bridge of cargo sake dev's MCP Apps preview: @modelcontextprotocol/ext-apps ${version(extApps)} ` +
      `(AppBridge) and @modelcontextprotocol/client ${version(join(modules, '@modelcontextprotocol/client'))}, ` +
      `with what they import, bundled by scripts/apps-bridge.mjs with esbuild ${esbuild.version}. ` +
      'Licences: bridge.LICENSES.txt. */',
  },
});

// The packages in the bundle: the directory under node_modules of each input.
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) continue;
  const parts = input.slice(at + 'node_modules/'.length).split('/');
  const name = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  const dir = join(input.slice(0, at), 'node_modules', name);
  packages.set(name, resolve(root, dir));
}
let licences =
  'The packages bundled in bridge.js (scripts/apps-bridge.mjs), each with its licence as its npm\n' +
  'package ships it.\n';
for (const name of [...packages.keys()].sort()) {
  const dir = packages.get(name);
  const meta = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.(md|txt))?$/i.test(f));
  if (!file) throw new Error(`${name} ships no licence file`);
  licences += `\n${'='.repeat(78)}\n${name} ${meta.version} (${meta.license})\n${'='.repeat(78)}\n\n`;
  licences += readFileSync(join(dir, file), 'utf8').trimEnd() + '\n';
}

mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'bridge.js'), result.outputFiles[0].contents);
writeFileSync(join(out, 'bridge.LICENSES.txt'), licences);
console.error(`bridge.js: ${result.outputFiles[0].contents.length} bytes, ${packages.size} packages: ${[...packages.keys()].sort().join(', ')}`);
