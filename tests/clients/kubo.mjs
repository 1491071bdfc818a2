// kubo-rpc-client against the devnet's IPFS API: add, cat, pin ls; an empty path's error.
import { create } from "kubo-rpc-client";

const args = JSON.parse(process.argv[2]);
const auth = "Basic " + Buffer.from(`${args.key}:${args.secret}`).toString("base64");
const ipfs = create({ url: `${args.url}/api/v0`, headers: { authorization: auth } });

const added = await ipfs.add(new TextEncoder().encode(args.text));
let text = "";
const decoder = new TextDecoder();
for await (const piece of ipfs.cat(added.cid)) text += decoder.decode(piece, { stream: true });
const pinned = [];
for await (const pin of ipfs.pin.ls({ paths: [added.cid] })) pinned.push(pin.cid.toString());
let emptyPath = null;
try {
  for await (const _ of ipfs.cat("/ipfs/")) { /* nothing */ }
} catch (e) {
  emptyPath = { message: e.message, status: e.response?.status ?? null };
}
process.stdout.write(
  JSON.stringify({ cid: added.cid.toString(), size: added.size, text, pinned, emptyPath }),
);
