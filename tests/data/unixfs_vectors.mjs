// Regenerates tests/data/unixfs_vectors.json with an independent UnixFS implementation.
// Run outside the repo:  npm install ipfs-unixfs-importer@17.1.1 blockstore-core@7
//                        node unixfs_vectors.mjs > unixfs_vectors.json
// Inputs: shake_256(b"feeslab-unixfs-<seed>") cut to <size> bytes (Python: hashlib.shake_256).
import { importer } from 'ipfs-unixfs-importer'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'
import { MemoryBlockstore } from 'blockstore-core'
import crypto from 'node:crypto'

const C = 262144, L = 174
const sizes = [0, 1, 12, 1000, C - 1, C, C + 1, 3 * C + 17, L * C - 1, L * C, L * C + 1, 2 * L * C + C / 2]
const cases = sizes.map((size, seed) => ({ seed, size }))
for (const [seed, size] of [[20, L * L * 64 - 1], [21, L * L * 64], [22, L * L * 64 + 1]]) cases.push({ seed, size })
const data = (seed, size) => crypto.createHash('shake256', { outputLength: size }).update(`feeslab-unixfs-${seed}`).digest()

const optionSets = {
  'cid-version=1': { cidVersion: 1, rawLeaves: true },
  'cid-version=1&raw-leaves=false': { cidVersion: 1, rawLeaves: false },
  'raw-leaves=true': { cidVersion: 0, rawLeaves: true },
  'chunker=size-1024': { cidVersion: 0, rawLeaves: false, chunkSize: 1024 },
  'cid-version=1&chunker=size-64': { cidVersion: 1, rawLeaves: true, chunkSize: 64 },
  '': { cidVersion: 0, rawLeaves: false }
}
async function add (entries, o, extra = {}) {
  const out = []
  for await (const r of importer(entries, new MemoryBlockstore(), {
    cidVersion: o.cidVersion, rawLeaves: o.rawLeaves, reduceSingleLeafToSelf: true,
    chunker: fixedSize({ chunkSize: o.chunkSize ?? C }),
    layout: balanced({ maxChildrenPerNode: L }), ...extra
  })) out.push({ path: r.path, cid: r.cid.toString(), size: Number(r.size) })
  return out
}
const files = []
for (const c of cases) {
  const content = data(c.seed, c.size)
  for (const [name, o] of Object.entries(optionSets)) {
    if (c.seed >= 20 && o.chunkSize !== 64 && name !== '') continue  // deep trees: small chunks
    if (c.seed < 20 && o.chunkSize === 64 && c.size > 3 * C + 17) continue
    const [r] = await add([{ path: 'f', content }], o)
    files.push({ seed: c.seed, size: c.size, options: name, cid: r.cid })
  }
}
const directories = []
const names = [['zeta.csv', 2], ['alpha.parquet', 6], ['Mid dle+name.txt', 3]]
for (const name of ['', 'cid-version=1']) {
  const entries = names.map(([path, seed]) => ({ path, content: data(seed, sizes[seed]) }))
  directories.push({ options: name, files: names, entries: await add(entries, optionSets[name], { wrapWithDirectory: true }) })
}
console.log(JSON.stringify({ source: 'ipfs-unixfs-importer 17.1.1 (js-ipfs\'s importer) via tests/data/unixfs_vectors.mjs, run outside the repo; kubo\'s add flags as a query string in "options"', files, directories }, null, 1))
