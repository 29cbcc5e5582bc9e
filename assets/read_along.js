// The read-along view under the result player: the word being heard is highlighted, following playback and
// seeking; a click on a word plays from it.  Runs as gr.HTML's js_on_load: `element` is the component,
// `watch` re-runs on a new value (a new result's words).  The player is Gradio's gr.Audio, whose <audio>
// element WaveSurfer keeps in an open shadow root (or a plain <audio> where the waveform is off); it is
// made again for each new result, so it is looked up again until found.
const ovReadAlong = { audio: null, spans: [], current: -1 };
function ovFindAudio() {
  const view = element.querySelector(".ov-read-along");
  const player = view && document.getElementById(view.getAttribute("data-ov-player"));
  if (!player) return null;
  for (const host of player.querySelectorAll("*")) {   // WaveSurfer's: the one that plays
    const inner = host.shadowRoot && host.shadowRoot.querySelector("audio");
    if (inner) return inner;
  }
  return Array.from(player.querySelectorAll("audio")).find((a) => a.src && a.offsetParent !== null) || null;
}
function ovHighlight() {
  const audio = ovReadAlong.audio;
  const time = audio ? audio.currentTime : -1;
  let index = -1;   // the last word started by now
  for (let i = 0; i < ovReadAlong.spans.length && Number(ovReadAlong.spans[i].dataset.start) <= time; i++) index = i;
  const view = element.querySelector(".ov-read-along");
  if (view) view.setAttribute("data-ov-time", time.toFixed(3));   // the player's time the highlight is for
  if (index === ovReadAlong.current) return;
  if (ovReadAlong.spans[ovReadAlong.current]) {
    ovReadAlong.spans[ovReadAlong.current].classList.remove("ov-word-now");
  }
  ovReadAlong.current = index;
  if (view) view.setAttribute("data-ov-current", String(index));
  if (index >= 0) ovReadAlong.spans[index].classList.add("ov-word-now");
}
function ovBind() {
  const audio = ovFindAudio();
  if (audio === ovReadAlong.audio) return;
  ovReadAlong.audio = audio;
  if (audio && !audio.__ovReadAlong) {
    audio.__ovReadAlong = true;
    for (const name of ["timeupdate", "seeked", "play", "loadedmetadata"]) {
      audio.addEventListener(name, () => { if (audio === ovReadAlong.audio) ovHighlight(); });
    }
  }
  ovHighlight();
}
function ovWords() {
  ovReadAlong.spans = Array.from(element.querySelectorAll(".ov-word"));
  ovReadAlong.current = -2;   // none drawn yet: the first highlight writes data-ov-current, -1 before any word
  ovReadAlong.audio = null;
  ovBind();
}
element.addEventListener("click", (event) => {
  const word = event.target.closest && event.target.closest(".ov-word");
  if (!word) return;
  ovBind();
  if (ovReadAlong.audio) {
    ovReadAlong.audio.currentTime = Number(word.dataset.start);
    ovReadAlong.audio.play().catch(() => {});
  }
});
setInterval(() => { if (ovReadAlong.spans.length) ovBind(); }, 300);  // the player made again for a new result
watch("value", ovWords);
ovWords();
