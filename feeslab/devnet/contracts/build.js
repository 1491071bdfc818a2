#!/usr/bin/env node
// Compiles every *.sol file beside this script with the solc-js version pinned in the repository's
// package.json, through solc's standard-JSON interface, and writes artifacts.json.
//
//   node feeslab/devnet/contracts/build.js [--out PATH]
//
// The output is deterministic: same sources and compiler -> byte-identical file (keys sorted,
// source unit names relative to this folder). Any compiler error or warning fails the build.
"use strict";

const crypto = require("crypto");
const fs = require("fs");
const path = require("path");

const HERE = __dirname;
const ROOT = path.resolve(HERE, "..", "..", "..");

const SETTINGS = {
  evmVersion: "shanghai", // the devnet's EVM: PUSH0 yes; no transient storage, no MCOPY
  optimizer: { enabled: true, runs: 200 },
  outputSelection: {
    "*": {
      "*": [
        "abi",
        "evm.bytecode.object",
        "evm.deployedBytecode.object",
        "evm.methodIdentifiers",
        "storageLayout",
      ],
    },
  },
};

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const key of Object.keys(value).sort()) out[key] = sortKeys(value[key]);
    return out;
  }
  return value;
}

function fail(message) {
  process.stderr.write(`build.js: ${message}\n`);
  process.exit(1);
}

function main() {
  const args = process.argv.slice(2);
  let out = path.join(HERE, "artifacts.json");
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--out" && i + 1 < args.length) out = path.resolve(args[++i]);
    else fail(`unknown argument ${args[i]} (usage: build.js [--out PATH])`);
  }

  const pinned = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"))
    .devDependencies.solc;
  const solc = require("solc");
  const version = solc.version();
  if (!version.startsWith(`${pinned}+`)) {
    fail(`solc-js ${version} is installed but package.json pins ${pinned}: run npm ci`);
  }

  const files = fs.readdirSync(HERE).filter((f) => f.endsWith(".sol")).sort();
  const sources = {};
  const sourcesSha256 = {};
  for (const file of files) {
    const bytes = fs.readFileSync(path.join(HERE, file));
    sources[file] = { content: bytes.toString("utf8") };
    sourcesSha256[file] = crypto.createHash("sha256").update(bytes).digest("hex");
  }

  const input = { language: "Solidity", sources, settings: SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));

  const problems = output.errors || [];
  for (const problem of problems) process.stderr.write(problem.formattedMessage || problem.message);
  if (problems.length > 0) fail(`${problems.length} compiler error(s) or warning(s)`);

  const contracts = {};
  for (const file of Object.keys(output.contracts).sort()) {
    for (const name of Object.keys(output.contracts[file]).sort()) {
      if (name in contracts) fail(`contract ${name} is defined in two files`);
      const c = output.contracts[file][name];
      contracts[name] = {
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
        methodIdentifiers: c.evm.methodIdentifiers,
        source: file,
        storageLayout: c.storageLayout,
      };
    }
  }

  const artifacts = {
    compiler: { name: "solc-js", version, settings: SETTINGS },
    contracts,
    sources_sha256: sourcesSha256,
  };
  fs.writeFileSync(out, `${JSON.stringify(sortKeys(artifacts), null, 2)}\n`);
  process.stdout.write(`build.js: ${Object.keys(contracts).length} contracts -> ${out}\n`);
}

main();
