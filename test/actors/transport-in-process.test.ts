import { InProcessTransport } from "../../actors/transport/in-process.ts";
import { transportContract } from "./transport-contract.ts";

transportContract("in-process", async () => {
  const transport = new InProcessTransport();
  return { transport, cleanup: () => transport.close() };
});
