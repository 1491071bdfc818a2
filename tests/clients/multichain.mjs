// MetaMask's @metamask/multichain-api-client against the devnet's WS /wallet. The client talks
// through a Transport ({connect, disconnect, isConnected, request, onNotification}); its own
// transports reach the extension, so this one carries the same JSON-RPC over a WebSocket.
import { getMultichainClient } from "@metamask/multichain-api-client";

const args = JSON.parse(process.argv[2]);

function webSocketTransport(url) {
  let socket = null;
  let nextId = 1;
  const pending = new Map();
  const listeners = new Set();
  return {
    warmupTimeout: 5000,
    isConnected: () => socket !== null && socket.readyState === WebSocket.OPEN,
    connect: () =>
      new Promise((resolve, reject) => {
        socket = new WebSocket(url);
        socket.onopen = () => resolve();
        socket.onerror = (e) => reject(new Error(`WebSocket error: ${e.message ?? e.type}`));
        socket.onmessage = (event) => {
          const message = JSON.parse(event.data);
          if (message.id === undefined || message.id === null) {
            for (const listener of listeners) listener(message);
          } else if (pending.has(message.id)) {
            pending.get(message.id)(message);
            pending.delete(message.id);
          }
        };
      }),
    disconnect: async () => {
      socket?.close();
      socket = null;
    },
    request: (request, options = {}) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`timeout: ${request.method}`));
        }, options.timeout ?? 30000);
        pending.set(id, (message) => {
          clearTimeout(timer);
          resolve(message);
        });
        socket.send(JSON.stringify({ jsonrpc: "2.0", id, ...request }));
      }),
    onNotification: (callback) => {
      listeners.add(callback);
      return () => listeners.delete(callback);
    },
  };
}

const client = getMultichainClient({ transport: webSocketTransport(args.url) });
const session = await client.createSession({
  optionalScopes: {
    "eip155:1": { methods: ["eth_blockNumber", "eth_call", "personal_sign"], notifications: [] },
  },
});
const account = session.sessionScopes["eip155:1"].accounts[0].split(":")[2];
const blockNumber = await client.invokeMethod({
  scope: "eip155:1",
  request: { method: "eth_blockNumber", params: [] },
});
const balance = await client.invokeMethod({
  scope: "eip155:1",
  request: { method: "eth_call", params: [{ to: args.token, data: args.balanceOfData }, "latest"] },
});
const signature = await client.invokeMethod({
  scope: "eip155:1",
  request: { method: "personal_sign", params: ["0x68656c6c6f", account] },
});
const after = await client.getSession();
await client.revokeSession({});
process.stdout.write(JSON.stringify({ session, account, blockNumber, balance, signature, after }));
