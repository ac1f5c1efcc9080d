// spanqa answer page: POST /{pipeline}/run, then GET /{pipeline}/source for the passage that holds the answer
// span, which is highlighted from its offsets. DOM text only (textContent), never HTML from the server.
"use strict";
(function () {
  const pipeline = document.body.dataset.pipeline;
  const reading = document.body.dataset.reading === "true";
  const $ = (id) => document.getElementById(id);
  const form = $("ask"), input = $("question"), button = $("submit");
  let answered = 0;
  const MAX_SOURCES = 10;

  function show(id, on) { $(id).hidden = !on; }
  function setStatus(text) { $("status").textContent = text; }
  function setError(text) { $("error").textContent = text || ""; show("error", Boolean(text)); }
  // a confidence and the bar it fell under, with as many decimals (2 to 4) as it takes not to read as equal
  // (components.core.verification.confidence.against_bar): 0.776 under 0.782 is "0.776" and "0.782", not "0.78" twice
  function againstBar(confidence, bar) {
    let shown = [];
    for (let d = 2; d <= 4; d++) {
      shown = [Number(confidence).toFixed(d), Number(bar).toFixed(d)];
      if (shown[0] !== shown[1]) break;
    }
    return shown;
  }

  // A server started with --keys needs "Authorization: Bearer <key>": the key is asked for on the first 401 and
  // kept for this tab only (sessionStorage), never in a cookie or in localStorage.
  const KEY = "spanqa-api-key";
  function authHeaders() {
    const key = sessionStorage.getItem(KEY);
    return key ? {"Authorization": "Bearer " + key} : {};
  }

  async function call(url, options) {
    options = Object.assign({}, options || {});
    options.headers = Object.assign({}, options.headers || {}, authHeaders());
    const response = await fetch(url, options);
    let body = null;
    try { body = await response.json(); } catch (e) { body = null; }
    if (response.status === 401) {
      sessionStorage.removeItem(KEY);
      show("auth", true);
      $("key").focus();
    }
    if (!response.ok) {
      const reason = body && typeof body.detail === "string" ? body.detail : response.status + " " + response.statusText;
      throw new Error(reason);
    }
    return body;
  }

  // Split `text` (starting at offset `start` in its document) around [spanStart, spanEnd) into a <mark>.
  function highlight(container, text, start, spanStart, spanEnd) {
    container.textContent = "";
    const a = spanStart - start, b = spanEnd - start;
    container.append(document.createTextNode(text.slice(0, a)));
    const mark = document.createElement("mark");
    mark.id = "span";
    mark.textContent = text.slice(a, b);
    container.append(mark, document.createTextNode(text.slice(b)));
  }

  // Markdown as a person reads it, built from DOM nodes (never innerHTML): a heading line bold, **strong** and
  // *emphasis* as such, `code` in monospace, list markers as bullets — no '#' or '*' symbols shown.
  const INLINE = /(\*\*|__)(.+?)\1|(\*|_)(?=\S)(.+?)\3(?![\w*])|`([^`]+)`/g;
  function inline(parent, text) {
    let last = 0;
    for (const m of text.matchAll(INLINE)) {
      parent.append(document.createTextNode(text.slice(last, m.index)));
      const el = document.createElement(m[2] !== undefined ? "strong" : m[4] !== undefined ? "em" : "code");
      el.textContent = m[2] !== undefined ? m[2] : m[4] !== undefined ? m[4] : m[5];
      parent.append(el);
      last = m.index + m[0].length;
    }
    parent.append(document.createTextNode(text.slice(last)));
  }
  function markdownText(container, text) {
    container.textContent = "";
    const lines = text.split("\n").filter((line) => line.trim() && !/^\s*\|?\s*:?-{3,}/.test(line));
    lines.forEach((line, i) => {
      const heading = line.match(/^\s*#{1,6}\s+(.*)$/);
      const item = line.match(/^\s*[-*+]\s+(.*)$/);
      if (heading) {
        const h = document.createElement("strong");
        h.className = "md-heading";
        inline(h, heading[1]);
        container.append(h);
      } else {
        inline(container, item ? "• " + item[1] : line);
      }
      if (i < lines.length - 1) container.append(document.createElement("br"));
    });
  }

  function renderSources(result) {
    const list = $("sources");
    list.textContent = "";
    const docs = result.documents || [];
    for (const d of docs.slice(0, MAX_SOURCES)) {
      const li = document.createElement("li");
      const name = document.createElement("span");
      name.className = "doc";
      name.textContent = d.doc_id + " · chars " + d.char_start + "–" + d.char_end;
      const snippet = document.createElement("div");
      snippet.className = "snippet";
      markdownText(snippet, d.text.length > 280 ? d.text.slice(0, 279) + "…" : d.text);
      li.append(name, snippet);
      list.append(li);
    }
    $("sources-more").textContent = docs.length > MAX_SOURCES ? "… and " + (docs.length - MAX_SOURCES) + " more" : "";
  }

  async function renderPassage(result) {
    show("passage-box", false);
    const span = (result.spans || [])[0];
    if (result.answer == null || !span) return;
    const q = new URLSearchParams({doc_id: span.doc_id, char_start: span.char_start, char_end: span.char_end});
    const passage = await call("/" + encodeURIComponent(pipeline) + "/source?" + q.toString());
    highlight($("passage"), passage.text, passage.start, span.char_start, span.char_end);
    const where = (passage.location && passage.location.cite) || span.doc_id;
    $("passage-source").textContent = "(" + where + ", chars " + span.char_start + "–" + span.char_end + ")";
    show("passage-box", true);
    await renderPage(span, passage.location || {});
  }

  // A PDF answer: the page as the person sees it, rendered by the server with the span's characters highlighted
  // (evidence sentences lighter). Fetched with the key like every call, shown from a blob: URL.
  let pageUrl = null;
  async function renderPage(span, location) {
    show("page-box", false);
    if (pageUrl) { URL.revokeObjectURL(pageUrl); pageUrl = null; }
    if (location.format !== "pdf" || !location.page) return;
    const evidence = (span.evidence || []).filter((e) => e.doc_id === span.doc_id)
      .map((e) => e.char_start + "-" + e.char_end).slice(0, 20).join(",");
    const q = new URLSearchParams({doc_id: span.doc_id, page: location.page, char_start: span.char_start,
                                   char_end: span.char_end, evidence: evidence});
    const response = await fetch("/" + encodeURIComponent(pipeline) + "/page_image?" + q.toString(),
                                 {headers: authHeaders()});
    if (!response.ok) {
      $("page-caption").textContent = "The page cannot be shown (" + response.status + ").";
      $("page-image").removeAttribute("src");
      show("page-box", true);
      return;
    }
    pageUrl = URL.createObjectURL(await response.blob());
    const img = $("page-image");
    img.alt = location.cite + ", the answer highlighted";
    img.src = pageUrl;
    $("page-caption").textContent = location.cite;
    show("page-box", true);
  }

  function renderAnswer(result) {
    const answer = $("answer");
    if (!reading) {
      answer.textContent = "Ranked passages (a retrieval pipeline has no reader).";
      answer.className = "";
    } else if (result.answer == null) {
      answer.textContent = "not found in the source";
      answer.className = "abstain";
    } else {
      answer.textContent = result.answer;
      answer.className = "";
    }
    const held = reading && result.answer == null ? result.held_back : null;
    show("held-back", Boolean(held));
    const figures = held ? againstBar(held.confidence, held.min_confidence) : null;
    $("held-back").textContent = held ? "Held back: found '" + held.answer + "'" + (held.doc_id ? " in " + held.doc_id : "")
      + ", confidence " + figures[0] + " — below the " + figures[1]
      + " bar, so it is not shown as an answer. Check the source before relying on it." : "";
    $("verdict").textContent = reading ? (result.verdict + (result.reason ? " — " + result.reason : "")) : "—";
    $("confidence").textContent = result.confidence == null ? "—" : Number(result.confidence).toFixed(2);
    $("route").textContent = (result.route || []).join(" → ") || "—";
  }

  $("auth").addEventListener("submit", (event) => {
    event.preventDefault();
    const key = $("key").value.trim();
    if (!key) { $("key").focus(); return; }
    sessionStorage.setItem(KEY, key);
    $("key").value = "";
    show("auth", false);
    setError("");
    if (input.value.trim()) { form.requestSubmit(); } else { input.focus(); }
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = input.value.trim();
    if (!query) { setError("Type a question first."); input.focus(); return; }
    setError(""); setStatus("Asking…"); button.disabled = true;
    document.body.dataset.state = "busy";
    try {
      const result = await call("/" + encodeURIComponent(pipeline) + "/run", {
        method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({query: query}),
      });
      renderAnswer(result);
      renderSources(result);
      show("result", true);
      await renderPassage(result);
      setStatus(result.answer == null && reading ? "Not found in the source." : "Answered.");
      $("answer").focus();
    } catch (error) {
      show("result", false);
      setError(error.message);
      setStatus("");
    } finally {
      button.disabled = false;
      document.body.dataset.state = "done";
      answered += 1;
      document.body.dataset.answered = String(answered);  // for tests and scripts: how many questions finished
    }
  });
})();
