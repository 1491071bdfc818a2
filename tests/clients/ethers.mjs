// ethers 6 against the devnet: default reads (no `from`), Contract views, the pending block,
// reverts through eth_call and eth_estimateGas, over HTTP and WebSocket. Prints what it saw.
import { Contract, Interface, JsonRpcProvider, WebSocketProvider } from "ethers";

const args = JSON.parse(process.argv[2]);

async function observe(provider) {
  const token = new Contract(args.token, args.abi, provider);
  const iface = new Interface(args.abi);
  const raw = await provider.call({
    to: args.token,
    data: iface.encodeFunctionData("balanceOf", [args.holder]),
  });
  const pending = await provider.getBlock("pending");
  const head = await provider.getBlockNumber();
  const reverter = new Contract(args.reverter, args.reverterAbi, provider);
  const errors = {};
  for (const [name, run] of [
    ["call", () => reverter.emptyRevert.staticCall()],
    ["estimate", () => reverter.emptyRevert.estimateGas()],
  ]) {
    try {
      await run();
      errors[name] = null;
    } catch (e) {
      errors[name] = { code: e.code, data: e.data ?? null, reason: e.reason ?? null };
    }
  }
  return {
    callBalance: BigInt(raw).toString(),
    viewBalance: (await token.balanceOf(args.holder)).toString(),
    pendingNumber: pending.number,
    pendingHash: pending.hash,
    pendingParent: pending.parentHash,
    head,
    latestHash: (await provider.getBlock(head)).hash,
    errors,
  };
}

const http = new JsonRpcProvider(args.url, undefined, { staticNetwork: true });
const ws = new WebSocketProvider(args.wsUrl);
try {
  const out = { http: await observe(http), ws: await observe(ws) };
  process.stdout.write(JSON.stringify(out));
} finally {
  http.destroy();
  await ws.destroy();
}
