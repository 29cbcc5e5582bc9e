// OpenAI's Node text-to-speech call (the openai package) with instructions from the environment
// (INSTRUCTIONS): prints the lengths of the X-OmniVoice headers, the details path and the audio's bytes.
import OpenAI from "openai";

const openai = new OpenAI();
const { data, response } = await openai.audio.speech
  .create({ model: "omnivoice", voice: "coral", input: "Hello there.", instructions: process.env.INSTRUCTIONS,
            response_format: "wav", steps: 1 })
  .withResponse();
const buffer = Buffer.from(await data.arrayBuffer());
const lengths = {};
for (const [name, value] of response.headers.entries()) {
  if (name.startsWith("x-omnivoice-")) lengths[name] = value.length;
}
console.log(JSON.stringify({ lengths, details: response.headers.get("x-omnivoice-details"),
                             ignored: response.headers.get("x-omnivoice-ignored"), bytes: buffer.length }));
