// The fee suggestions of ethers 6 (provider.getFeeData) and viem (estimateFeesPerGas, with its
// default base fee multiplier and with a chain's own), against one devnet. Prints each with
// the head block they were computed at (asked before and after, to show it did not move).
import { JsonRpcProvider } from "ethers";
import { createPublicClient, defineChain, http } from "viem";
import { mainnet } from "viem/chains";

const args = JSON.parse(process.argv[2]);

const provider = new JsonRpcProvider(args.url, undefined, { staticNetwork: true });
const plain = createPublicClient({ chain: mainnet, transport: http(args.url) });
const scaled = createPublicClient({
  chain: defineChain({ ...mainnet, fees: { baseFeeMultiplier: args.multiplier } }),
  transport: http(args.url),
});
try {
  const before = await plain.getBlockNumber({ cacheTime: 0 });
  const ethers = await provider.getFeeData();
  const viem = await plain.estimateFeesPerGas();
  const viemScaled = await scaled.estimateFeesPerGas();
  const after = await plain.getBlockNumber({ cacheTime: 0 });
  process.stdout.write(JSON.stringify({
    before: before.toString(),
    after: after.toString(),
    ethers: {
      maxFeePerGas: ethers.maxFeePerGas.toString(),
      maxPriorityFeePerGas: ethers.maxPriorityFeePerGas.toString(),
    },
    viem: {
      maxFeePerGas: viem.maxFeePerGas.toString(),
      maxPriorityFeePerGas: viem.maxPriorityFeePerGas.toString(),
    },
    viemScaled: {
      maxFeePerGas: viemScaled.maxFeePerGas.toString(),
      maxPriorityFeePerGas: viemScaled.maxPriorityFeePerGas.toString(),
    },
  }));
} finally {
  provider.destroy();
}
