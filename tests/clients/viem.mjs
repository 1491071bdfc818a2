// viem against the devnet: readContract (no `from`), the pending block, over HTTP and WebSocket.
import { createPublicClient, http, webSocket } from "viem";
import { mainnet } from "viem/chains";

const args = JSON.parse(process.argv[2]);

async function observe(client) {
  const balance = await client.readContract({
    address: args.token,
    abi: args.abi,
    functionName: "balanceOf",
    args: [args.holder],
  });
  const pending = await client.getBlock({ blockTag: "pending" });
  const head = await client.getBlockNumber({ cacheTime: 0 });
  let revert = null;
  try {
    await client.estimateContractGas({
      address: args.reverter,
      abi: args.reverterAbi,
      functionName: "emptyRevert",
      account: "0x0000000000000000000000000000000000000000",
    });
  } catch (e) {
    revert = { name: e.name, cause: e.cause?.name ?? null };
  }
  return {
    balance: balance.toString(),
    pendingNumber: pending.number.toString(),
    head: head.toString(),
    revert,
  };
}

const overHttp = createPublicClient({ chain: mainnet, transport: http(args.url) });
const overWs = createPublicClient({ chain: mainnet, transport: webSocket(args.wsUrl) });
const out = { http: await observe(overHttp), ws: await observe(overWs) };
const socket = await overWs.transport.getRpcClient();
socket.close();
process.stdout.write(JSON.stringify(out));
