// Plays the finished chunks of a long text in order while later ones are computed.
// Runs as gr.HTML's js_on_load: `element` is the component, `watch` re-runs on a new value.
// The queue lives on window (one for the page), so Speak and Clone share it, and the
// <audio> elements re-rendered by each update do not interrupt what is playing.
const ov = window.__ovChunks || (window.__ovChunks = { seen: new Set(), queue: [], playing: null, run: null, played: [] });
function ovPlayNext() {
  if (ov.playing || ov.queue.length === 0) return;
  const item = ov.queue.shift();
  ov.playing = item;
  const done = () => { if (ov.playing === item) { ov.playing = null; ovPlayNext(); } };
  item.audio.onended = done;
  item.audio.onerror = done;
  ov.played.push(item.key);
  item.audio.play().catch(done);
}
function ovScan() {
  element.querySelectorAll("audio[data-ov-chunk]").forEach((el) => {
    const key = el.getAttribute("data-ov-chunk");
    if (ov.seen.has(key)) return;
    ov.seen.add(key);
    const run = key.split(":")[0];
    if (run !== ov.run) {  // a new generation: drop what is left of the previous one
      ov.run = run;
      ov.queue = [];
      if (ov.playing) { ov.playing.audio.pause(); ov.playing = null; }
    }
    ov.queue.push({ key: key, audio: new Audio(el.getAttribute("src")) });
    ovPlayNext();
  });
}
watch("value", ovScan);
ovScan();
