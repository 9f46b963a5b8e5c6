// The question browser of report.html (and of `bio-mrc extract --html`). Its data is the JSON of
// bio_mrc/harness/browser_payload.py: typed arrays in base64, contexts once per paragraph, answers as
// UTF-16 offsets into them. Filters run over the typed arrays; only the visible page of the list and
// the one question shown are put into the DOM.
"use strict";
(function () {
  const PAGE_SIZE = 50;
  const RIGHT_IF = 50;  // official F1 > 50 counts as right, as the report's calibration does
  const ARRAYS = { uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, int32: Int32Array, float32: Float32Array };
  const $ = (id) => document.getElementById(id);

  function typed(entry) {
    if (!entry) return null;
    const text = atob(entry.base64);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const Type = ARRAYS[entry.type];
    return new Type(bytes.buffer, 0, bytes.length / Type.BYTES_PER_ELEMENT);
  }

  function prefixSums(counts) {
    const sums = new Uint32Array(counts.length + 1);
    for (let i = 0; i < counts.length; i++) sums[i + 1] = sums[i] + counts[i];
    return sums;
  }

  function load(raw) {
    const cells = raw.cells.map((c) => ({
      label: c.run + "/" + c.decoding + (c.seed === null ? "" : " · seed " + c.seed), model: c.model, texts: c.texts,
      start: typed(c.start), end: typed(c.end), keys: typed(c.keys), f1: typed(c.f1), em: typed(c.em),
      confidence: typed(c.confidence), probability: typed(c.probability),
    }));
    const models = raw.models.map((m) => ({ label: m.run + (m.seed === null ? "" : " · seed " + m.seed),
      tables: typed(m.tables), tags: typed(m.tags), tagStarts: typed(m.tagStarts) }));
    const tables = { counts: typed(raw.wordTables.counts), gaps: typed(raw.wordTables.gaps), lengths: typed(raw.wordTables.lengths) };
    tables.first = prefixSums(tables.counts);
    const gold = raw.gold && { counts: typed(raw.gold.counts), offsets: typed(raw.gold.offsets) };
    if (gold) gold.first = prefixSums(gold.counts);
    const groups = raw.groups.map((g) => ({ name: g.name, labels: g.labels, codes: typed(g.codes) }));
    return { title: raw.title, ids: raw.ids, questions: raw.questions, contexts: raw.contexts, paragraph: typed(raw.paragraph),
      gold, cells, models, tables, groups, defaultPair: raw.defaultPair, n: raw.ids.length,
      searchText: raw.ids.map((id, q) => (id + " " + raw.questions[q]).toLowerCase()) };
  }

  // --- one question's texts ---------------------------------------------------------------------

  function answerText(data, cell, q) {
    if (cell.texts) return cell.texts[q];
    return cell.start[q] < 0 ? "" : data.contexts[data.paragraph[q]].slice(cell.start[q], cell.end[q]);
  }

  function goldSpans(data, q) {
    const spans = [];
    if (!data.gold) return spans;
    for (let k = data.gold.first[q]; k < data.gold.first[q + 1]; k++) spans.push([data.gold.offsets[2 * k], data.gold.offsets[2 * k + 1]]);
    return spans;
  }

  function words(data, model, q) {
    if (!model || !model.tables) return null;
    const table = model.tables[q], t = data.tables;
    const found = [];
    let end = 0;
    for (let w = t.first[table]; w < t.first[table + 1]; w++) {
      const start = end + t.gaps[w];
      end = start + t.lengths[w];
      found.push([start, end]);
    }
    return found;
  }

  function tagBytes(model, q, wordCount) {  // undo the zero-run coding of one question: [B0, I0, B1, I1, ...]
    const out = new Uint8Array(2 * wordCount), code = model.tags;
    let j = 0;
    for (let i = model.tagStarts[q]; i < model.tagStarts[q + 1]; i++) {
      if (code[i] === 0) { j += code[i + 1]; i++; } else { out[j++] = code[i]; }
    }
    return out;
  }

  // --- the list: filter, sort, page ---------------------------------------------------------------

  function rightMatches(choice, a, b) {
    switch (choice) {
      case "one": return a !== b;
      case "a": return a && !b;
      case "b": return b && !a;
      case "both": return a && b;
      case "neither": return !a && !b;
      default: return true;
    }
  }

  function filtered(data, view) {
    const a = data.cells[view.a], b = data.cells[view.b];
    const useRight = view.right && a.f1 && b.f1;
    const chosen = view.groups.map((value, k) => [data.groups[k].codes, value]).filter(([, value]) => value >= 0);
    const out = new Uint32Array(data.n);
    let count = 0;
    for (let q = 0; q < data.n; q++) {
      if (view.agree && (a.keys[q] === b.keys[q]) !== (view.agree === "agree")) continue;
      if (useRight && !rightMatches(view.right, a.f1[q] > RIGHT_IF, b.f1[q] > RIGHT_IF)) continue;
      if (chosen.some(([codes, value]) => codes[q] !== value)) continue;
      if (view.text && !data.searchText[q].includes(view.text)) continue;
      out[count++] = q;
    }
    return out.subarray(0, count);
  }

  function sorted(data, view, rows) {
    const a = data.cells[view.a], b = data.cells[view.b];
    let key = null;
    if (view.sort.startsWith("diff") && a.f1 && b.f1) key = (q) => a.f1[q] - b.f1[q];
    if (view.sort === "confidence-asc" && a.confidence) key = (q) => a.confidence[q];
    if (!key) return rows;
    const keys = new Float64Array(data.n);
    for (const q of rows) keys[q] = view.sort === "diff-desc" ? -key(q) : key(q);
    return Uint32Array.from(Array.from(rows).sort((x, y) => keys[x] - keys[y] || x - y));
  }

  // --- drawing ------------------------------------------------------------------------------------

  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  const number = (x, digits) => (x === null || x === undefined ? "–" : x.toFixed(digits));
  const byteShare = (cell, name, q) => (cell[name] ? cell[name][q] / 255 : null);

  function answerCell(text) {
    return text ? element("td", text) : element("td", "no answer", "no-answer");
  }

  function listRow(data, view, q) {
    const a = data.cells[view.a], b = data.cells[view.b];
    const row = element("tr");
    row.dataset.question = String(q);
    row.append(element("td", String(q + 1), "number"), element("td", data.questions[q]),
      answerCell(answerText(data, a, q)), answerCell(answerText(data, b, q)));
    if (a.f1 && b.f1) {
      row.append(element("td", number(a.f1[q], 0), "number"), element("td", number(b.f1[q], 0), "number"),
        element("td", (a.f1[q] - b.f1[q] > 0 ? "+" : "") + number(a.f1[q] - b.f1[q], 0), "number"));
    }
    row.title = data.ids[q];
    if (q === view.picked) row.classList.add("picked");
    return row;
  }

  function drawList(data, view) {
    const body = $("list").tBodies[0];
    const pages = Math.max(1, Math.ceil(view.rows.length / PAGE_SIZE));
    view.page = Math.min(view.page, pages - 1);
    const first = view.page * PAGE_SIZE, last = Math.min(view.rows.length, first + PAGE_SIZE);
    const fragment = document.createDocumentFragment();
    for (let k = first; k < last; k++) fragment.append(listRow(data, view, view.rows[k]));
    body.replaceChildren(fragment);
    $("page-info").textContent = "page " + (view.page + 1) + " of " + pages;
    $("previous-page").disabled = view.page === 0;
    $("next-page").disabled = view.page >= pages - 1;
    $("status").textContent = statusLine(data, view, first, last);
  }

  function statusLine(data, view, first, last) {
    const shown = view.rows.length.toLocaleString("en-US"), total = data.n.toLocaleString("en-US");
    let line = view.rows.length ? "questions " + (first + 1) + "–" + last + " of " + shown + " shown (" + total + " in all)"
      : "no question matches (" + total + " in all)";
    const a = data.cells[view.a], b = data.cells[view.b];
    if (a.f1 && b.f1 && view.rows.length) {
      let sumA = 0, sumB = 0;
      for (const q of view.rows) { sumA += a.f1[q]; sumB += b.f1[q]; }
      line += "; mean F1 of these: A " + (sumA / view.rows.length).toFixed(2) + ", B " + (sumB / view.rows.length).toFixed(2);
    }
    return line;
  }

  function shadingModel(data, view) {  // the BIO head to shade words by: A's model, else B's
    for (const index of [view.a, view.b]) {
      const model = data.models[data.cells[index].model];
      if (model && model.tags) return model;
    }
    return null;
  }

  function segmentsOf(context, marks, wordSpans) {  // cut the context at every mark and word boundary
    const cuts = new Set([0, context.length]);
    for (const [, spans] of marks) for (const [s, e] of spans) { cuts.add(s); cuts.add(e); }
    if (wordSpans) for (const [s, e] of wordSpans) { cuts.add(s); cuts.add(e); }
    return Array.from(cuts).filter((x) => x >= 0 && x <= context.length).sort((x, y) => x - y);
  }

  function drawContext(data, view, q) {
    const context = data.contexts[data.paragraph[q]];
    const a = data.cells[view.a], b = data.cells[view.b];
    const marks = [["gold", goldSpans(data, q)], ["answer-a", a.start[q] >= 0 ? [[a.start[q], a.end[q]]] : []],
      ["answer-b", b.start[q] >= 0 ? [[b.start[q], b.end[q]]] : []]];
    const model = view.shade ? shadingModel(data, view) : null;
    const wordSpans = model ? words(data, model, q) : null;
    const probabilities = wordSpans ? tagBytes(model, q, wordSpans.length) : null;
    const cuts = segmentsOf(context, marks, wordSpans);
    const box = element("div", null, "context");
    let word = 0;
    for (let k = 0; k + 1 < cuts.length; k++) {
      const [s, e] = [cuts[k], cuts[k + 1]];
      const piece = element("span", context.slice(s, e));
      for (const [name, spans] of marks) if (spans.some(([x, y]) => x <= s && e <= y)) piece.classList.add(name);
      while (wordSpans && word < wordSpans.length && wordSpans[word][1] <= s) word++;
      if (wordSpans && word < wordSpans.length && wordSpans[word][0] <= s && e <= wordSpans[word][1]) shade(piece, probabilities, word);
      box.append(piece);
    }
    return box;
  }

  function shade(piece, probabilities, word) {
    const pB = probabilities[2 * word] / 255, pI = probabilities[2 * word + 1] / 255;
    piece.style.background = "linear-gradient(to bottom, rgba(34,139,34," + pB.toFixed(3) + ") 0 50%, rgba(30,100,220," + pI.toFixed(3) + ") 50% 100%)";
    piece.title = "P(B) " + pB.toFixed(2) + " · P(I) " + pI.toFixed(2);
    piece.dataset.word = String(word);
  }

  function cellTable(data, view, q) {
    const table = element("table");
    const head = element("tr");
    for (const title of ["cell", "answer", "confidence", "probability", "F1", "EM"]) head.append(element("th", title));
    table.append(head);
    data.cells.forEach((cell, index) => {
      const row = element("tr");
      if (index === view.a) row.classList.add("is-a");
      if (index === view.b) row.classList.add("is-b");
      row.append(element("td", cell.label + (index === view.a ? " (A)" : index === view.b ? " (B)" : "")), answerCell(answerText(data, cell, q)),
        element("td", number(byteShare(cell, "confidence", q), 2), "number"), element("td", number(byteShare(cell, "probability", q), 2), "number"),
        element("td", cell.f1 ? number(cell.f1[q], 1) : "–", "number"), element("td", cell.em ? String(cell.em[q] * 100) : "–", "number"));
      table.append(row);
    });
    return table;
  }

  function legend(data, view) {
    const box = element("p", null, "legend");
    box.append(element("span", "gold answer", "gold"), element("span", "A", "answer-a"), element("span", "B", "answer-b"));
    const model = shadingModel(data, view);
    if (model) {
      const toggle = element("label");
      const check = element("input");
      check.type = "checkbox"; check.checked = view.shade; check.id = "shade";
      check.addEventListener("change", () => { view.shade = check.checked; drawDetail(data, view); });
      toggle.append(check, " shade words by the BIO head of " + model.label + ": ");
      box.append(toggle, element("span", "P(B)", "swatch-b"), element("span", "P(I)", "swatch-i"));
    }
    return box;
  }

  function drawDetail(data, view) {
    const detail = $("detail"), q = view.picked;
    if (q === null) { detail.replaceChildren(element("p", "no question chosen", "no-answer")); return; }
    const heading = element("h2", data.questions[q]);
    const meta = element("p", "question " + (q + 1) + " · id " + data.ids[q] + " · paragraph " + (data.paragraph[q] + 1), "meta");
    const parts = [heading, meta];
    if (data.gold) {
      const texts = Array.from(new Set(goldSpans(data, q).map(([s, e]) => data.contexts[data.paragraph[q]].slice(s, e))));
      parts.push(element("p", "gold: " + (texts.length ? texts.join(" | ") : "no answer (unanswerable)")));
    }
    parts.push(cellTable(data, view, q), legend(data, view), drawContext(data, view, q));
    detail.replaceChildren(...parts);
  }

  // --- wiring -------------------------------------------------------------------------------------

  function readView(data, view) {
    view.a = Number($("cell-a").value); view.b = Number($("cell-b").value);
    view.agree = $("filter-agree").value; view.right = $("filter-right").value; view.sort = $("sort").value;
    view.text = $("filter-text").value.trim().toLowerCase();
    view.groups = data.groups.map((g, k) => { const value = $("group-" + k).value; return value === "" ? -1 : Number(value); });
  }

  function refresh(data, view) {
    readView(data, view);
    view.rows = sorted(data, view, filtered(data, view));
    view.page = 0;
    if (view.picked === null || !view.rows.includes(view.picked)) view.picked = view.rows.length ? view.rows[0] : null;
    drawList(data, view);
    drawDetail(data, view);
  }

  function fillControls(data) {
    for (const [id, chosen] of [["cell-a", data.defaultPair[0]], ["cell-b", data.defaultPair[1]]]) {
      const select = $(id);
      data.cells.forEach((cell, index) => select.append(new Option(cell.label, String(index), false, index === chosen)));
    }
    data.groups.forEach((group, k) => {
      const counts = new Uint32Array(group.labels.length);
      for (const code of group.codes) counts[code]++;
      const select = element("select");
      select.id = "group-" + k;
      select.name = group.name;
      select.append(new Option("all", ""));
      group.labels.forEach((label, code) => select.append(new Option(label + " (" + counts[code].toLocaleString("en-US") + ")", String(code))));
      const wrapper = element("label", group.name + " ");
      wrapper.append(select);
      $("group-filters").append(wrapper);
    });
  }

  function wire(data, view) {
    fillControls(data);
    const update = () => refresh(data, view);
    for (const id of ["cell-a", "cell-b", "filter-agree", "filter-right", "sort"]) $(id).addEventListener("change", update);
    data.groups.forEach((_, k) => $("group-" + k).addEventListener("change", update));
    $("filter-text").addEventListener("input", update);
    $("previous-page").addEventListener("click", () => { view.page--; drawList(data, view); });
    $("next-page").addEventListener("click", () => { view.page++; drawList(data, view); });
    $("list").tBodies[0].addEventListener("click", (event) => {
      const row = event.target.closest("tr");
      if (!row) return;
      view.picked = Number(row.dataset.question);
      for (const other of row.parentNode.children) other.classList.toggle("picked", other === row);
      drawDetail(data, view);
    });
  }

  function showTab(name) {
    for (const button of document.querySelectorAll("#tabs button")) button.setAttribute("aria-selected", String(button.dataset.tab === name));
    for (const section of document.querySelectorAll("section.tab")) section.hidden = section.id !== "tab-" + name;
  }

  function startTabs(hasReport, hasBrowser) {
    const available = [hasReport && "report", hasBrowser && "questions"].filter(Boolean);  // hashes #report, #questions
    for (const button of document.querySelectorAll("#tabs button")) {
      button.hidden = !available.includes(button.dataset.tab);
      button.addEventListener("click", () => { showTab(button.dataset.tab); history.replaceState(null, "", "#" + button.dataset.tab); });
    }
    $("tabs").hidden = available.length < 2;
    const fromHash = () => { const wanted = location.hash.slice(1); showTab(available.includes(wanted) ? wanted : available[0]); };
    window.addEventListener("hashchange", fromHash);
    fromHash();
  }

  function start() {
    const raw = JSON.parse($("browser-data").textContent);
    startTabs($("tab-report").children.length > 0, raw !== null);
    if (raw === null) return;
    const data = load(raw);
    $("browser-title").textContent = data.title;
    document.body.classList.toggle("no-gold", !data.gold);
    const view = { picked: null, page: 0, shade: true, rows: new Uint32Array(0) };
    wire(data, view);
    refresh(data, view);
    window.bioMrcBrowser = { questions: data.n, shown: () => view.rows.length, picked: () => view.picked, readyMs: performance.now() };
  }

  start();
})();
