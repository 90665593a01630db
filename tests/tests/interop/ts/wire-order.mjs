// Shared by the TypeScript interop scripts.
//
// The SDK runs notification handlers (progress included) a microtask after it reads them, but
// settles responses at once: a last progress notification read in the same chunk as the
// response reaches its handler after the request has ended ("unknown token"), though the
// server sent it first. Responses are handed over a microtask later too, so that the client
// handles what the server sent in the order it was sent.
export function inWireOrder(transport) {
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if ('id' in message && !('method' in message)) {
      Promise.resolve().then(() => deliver(message, extra));
    } else {
      deliver(message, extra);
    }
  };
}
