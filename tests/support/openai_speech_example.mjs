// OpenAI's text-to-speech example for Node (the openai package), as OpenAI documents it; only the
// base URL differs (OPENAI_BASE_URL and OPENAI_API_KEY come from the environment). It prints what
// the server says it applied and ignored, and how many bytes of audio it wrote.
import fs from "fs";
import path from "path";
import OpenAI from "openai";

const openai = new OpenAI();
const speechFile = path.resolve(process.argv[2] ?? "./speech.mp3");

const { data: mp3, response } = await openai.audio.speech
  .create({
    model: "gpt-4o-mini-tts",
    voice: "coral",
    input: "Today is a wonderful day to build something people love!",
    instructions: "Speak in a cheerful and positive tone.",
  })
  .withResponse();

const buffer = Buffer.from(await mp3.arrayBuffer());
await fs.promises.writeFile(speechFile, buffer);
console.log(JSON.stringify({
  instruct: response.headers.get("x-omnivoice-instruct"),
  ignored: response.headers.get("x-omnivoice-ignored"),
  bytes: buffer.length,
}));
