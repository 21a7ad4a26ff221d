// A minimal complete Sticheln bot: it always plays its lowest card (docs/bot-protocol.md).
"use strict";
const path = require("node:path");
const crypto = require("node:crypto");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const definition = protoLoader.loadSync("sticheln/v1/bot.proto", {
  includeDirs: [path.join(__dirname, "proto")], // the folder's copy of the repository's proto/
  keepCase: true, // field names as in the .proto
  longs: String, // uint64 request ids and seeds as decimal strings
  enums: String, // enum values by name
  defaults: true,
  oneofs: true, // message.kind names the field that is set
});
const v1 = grpc.loadPackageDefinition(definition).sticheln.v1;
const address = process.env.STICHELN_REFEREE; // host:port, set by the referee
const token = process.env.STICHELN_TOKEN; // this seat's token, set by the referee
const client = new v1.Referee(address, grpc.credentials.createInsecure());
const call = client.Play();
let start = null;

call.write({ hello: { bot_name: "minimal-node", bot_version: "1", protocol_version: 1, token } });
call.on("data", (message) => {
  if (message.kind === "match_start") {
    start = message.match_start;
  } else if (message.kind === "request") {
    const request = message.request;
    const hand = [...request.view.hand].sort((a, b) => a - b);
    const cards = [hand[0]]; // a card play, or the first pain card
    if (request.count === 2) {
      // a second pain card, of another suit if any
      const other = hand.find((c) => c >> 4 !== hand[0] >> 4);
      cards.push(other === undefined ? hand[1] : other);
    }
    call.write({ decision: { request_id: request.request_id, cards } });
  } else if (message.kind === "match_end") {
    const end = message.match_end;
    const seed = Buffer.alloc(8);
    seed.writeBigUInt64BE(BigInt(end.seed));
    const digest = crypto.createHash("sha256").update("sticheln/seed/v1").update(seed).update(end.seed_nonce).digest();
    if (end.seed_withheld) {
      // A later match plays the same deal (duplicate mode): nothing to check yet.
      console.error(`minimal-node: seed withheld: ${end.seed_withheld}`);
    } else if (!start || !digest.equals(start.seed_commitment)) {
      console.error("minimal-node: the seed does not match its commitment");
    }
  }
});
call.on("end", () => call.end());
call.on("error", (err) => {
  // refused, or the referee went away
  console.error(`minimal-node: ${grpc.status[err.code]}: ${err.details}`);
  process.exit(1);
});
call.on("status", (status) => {
  if (status.code === grpc.status.OK) process.exit(0); // no more matches
});
