#!/usr/bin/env node
// The ane4j kernel's displays in a real browser (issue 15): Debian's classic Notebook 6.4 in headless Chromium, and
// JupyterLab's own renderers on a page bundled here with esbuild.
//
//   JUPYTER_PATH=... node tools/browser/browser-test.mjs --kernel NAME [--out DIR] [--screenshot FILE.png] [NOTEBOOK...]
//
// 1. Starts `jupyter notebook` on 127.0.0.1 (a random port, a random token) in a scratch copy of the notebooks, whose
//    kernelspec name is set to NAME.
// 2. Classic Notebook: opens each notebook (default notebooks/02-train-tiny.ipynb), clicks Kernel > Restart & Run All,
//    samples the page every 150 ms until every cell ran, and checks: no error output except in cells tagged
//    raises-exception, and in each %%train cell a progress line and a loss plot that change while it runs and are
//    updated in place (the cell never holds more outputs than at the end). Saves the notebook and screenshots it.
// 3. JupyterLab (@jupyterlab/outputarea + rendermime + the apputils Sanitizer, no Lab application): renders the saved
//    notebooks' outputs untrusted, as Lab shows a notebook someone else executed, and checks that HTML tables and
//    images survive the sanitizer; then runs one short %%train live through @jupyterlab/services against the same
//    server and checks that update_display_data replaces outputs in place in Lab's output area.
// Prints one "ok"/"FAIL" line per check and ends with "N passed, N failed". Exit status 0 when all pass.
// --screenshot FILE writes the classic Notebook's first %%train cell there (the README's picture).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import crypto from 'node:crypto';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const CHROMIUM = process.env.ANE4J_CHROMIUM || '/usr/bin/chromium';
const PYTHON = process.env.ANE4J_PYTHON || '/usr/bin/python3';

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); if (i < 0) return dflt; const v = args[i + 1]; args.splice(i, 2); return v; };
const KERNEL = opt('--kernel', 'ane4j');
const OUT = path.resolve(opt('--out', path.join(ROOT, 'target', 'browser')));
const SCREENSHOT = opt('--screenshot', null);
const NOTEBOOKS = args.length ? args : [path.join(ROOT, 'notebooks', '02-train-tiny.ipynb')];
const LIVE_TRAIN = '%%train live\nsteps = 24\nseed = 7\nbackend = ref';

let passed = 0, failed = 0;
function check(cond, what) {
  console.log((cond ? 'ok   ' : 'FAIL ') + what);
  cond ? passed++ : failed++;
}
const log = (...a) => console.log('     ' + a.join(' '));

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
    srv.on('error', reject);
  });
}

// A scratch folder with copies of the notebooks (kernelspec name NAME, no outputs) and nothing else.
function prepare(work) {
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  return NOTEBOOKS.map(src => {
    const nb = JSON.parse(fs.readFileSync(src, 'utf8'));
    nb.metadata.kernelspec = { ...nb.metadata.kernelspec, name: KERNEL };
    const name = path.basename(src);
    fs.writeFileSync(path.join(work, name), JSON.stringify(nb, null, 1));
    return name;
  });
}

async function startServer(work, port, token) {
  const server = spawn(PYTHON, ['-m', 'notebook', '--no-browser', '--ip=127.0.0.1', `--port=${port}`, '--port-retries=0', '--allow-root',
    `--NotebookApp.token=${token}`, `--NotebookApp.extra_static_paths=${JSON.stringify([path.join(OUT, 'static')])}`, `--notebook-dir=${work}`, '--NotebookApp.disable_check_xsrf=False'],
    { env: { ...process.env, PYDEVD_DISABLE_FILE_VALIDATION: '1' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const serverLog = fs.createWriteStream(path.join(OUT, 'notebook-server.log'));
  server.stdout.pipe(serverLog); server.stderr.pipe(serverLog);
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (server.exitCode !== null) throw new Error(`[browser] jupyter notebook exited (${server.exitCode}); see ${OUT}/notebook-server.log`);
    try {
      const r = await fetch(`${base}/api/status?token=${token}`);
      if (r.ok) return { server, base };
    } catch { /* not up yet */ }
    await new Promise(r => setTimeout(r, 100));
  }
  throw new Error(`[browser] jupyter notebook did not answer on ${base} within 30 s; see ${OUT}/notebook-server.log`);
}

// ---- the classic Notebook

// What the page shows now: per code cell its prompt, tags, and outputs (class, text, image sources).
function snapshot() {
  const cells = Jupyter.notebook.get_cells().filter(c => c.cell_type === 'code');
  return {
    idle: !!document.querySelector('#kernel_indicator_icon.kernel_idle_icon'),
    cells: cells.map(c => ({
      prompt: c.input_prompt_number,
      source: c.get_text().slice(0, 80),
      tags: (c.metadata.tags || []),
      outputs: [...c.element[0].querySelectorAll('.output_area')].map(a => ({
        error: !!a.querySelector('.output_error'),
        stderr: !!a.querySelector('.output_stderr'),
        text: (a.querySelector('.output_subarea') || a).innerText.slice(0, 300),
        img: (a.querySelector('img') || {}).src || null,
      })),
    })),
  };
}

async function classic(browser, base, token, name) {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on('pageerror', e => log(`page error in ${name}: ${e.message}`));
  await page.goto(`${base}/notebooks/${encodeURIComponent(name)}?token=${token}`);
  await page.waitForFunction(() => window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel && Jupyter.notebook.kernel.is_connected(), null, { timeout: 60000 });
  // Kernel > Restart & Run All, then the confirmation dialog's red button, as a person does it
  await page.click('#kernellink');
  await page.click('#restart_run_all');
  await page.click('.modal-dialog .modal-footer button.btn-danger');
  const t0 = Date.now();
  const samples = [];
  let snap;
  for (;;) {
    snap = await page.evaluate(snapshot);
    samples.push(snap);
    const done = snap.idle && snap.cells.every(c => typeof c.prompt === 'number') && Date.now() - t0 > 2000;
    if (done) break;
    if (Date.now() - t0 > 600000) { check(false, `${name}: Run All finished within 10 min`); break; }
    await page.waitForTimeout(150);
  }
  const took = (Date.now() - t0) / 1000;
  check(snap.cells.every(c => typeof c.prompt === 'number'), `${name}: Restart & Run All ran all ${snap.cells.length} code cells (${took.toFixed(1)} s)`);
  const errors = snap.cells.filter(c => c.outputs.some(o => o.error) && !c.tags.includes('raises-exception'));
  check(errors.length === 0, `${name}: no error output outside cells tagged raises-exception` + errors.map(c => `\n       ${c.source}: ${c.outputs.find(o => o.error).text}`).join(''));
  const raw = snap.cells.flatMap(c => c.outputs.filter(o => /^[\w.$]+@[0-9a-f]{4,}$/.test(o.text.trim())).map(o => `${c.source.split('\n')[0]}: ${o.text.trim()}`));
  check(raw.length === 0, `${name}: no output is a bare Object.toString (Class@hash)` + raw.map(r => `\n       ${r}`).join(''));
  const expected = snap.cells.filter(c => c.tags.includes('raises-exception'));
  check(expected.every(c => c.outputs.some(o => o.error)), `${name}: every cell tagged raises-exception shows its error (${expected.length})`);

  const trainCells = snap.cells.map((c, i) => [c, i]).filter(([c]) => c.source.startsWith('%%train'));
  for (const [cell, i] of trainCells) {
    const label = `${name}: ${cell.source.split('\n')[0]}`;
    const during = samples.map(s => s.cells[i].outputs).filter(o => o.length);
    const progress = new Set(during.map(o => o.find(x => /step \d+\/\d+/.test(x.text))).filter(Boolean).map(x => x.text.match(/step \d+\/\d+/)[0]));
    const plots = new Set(during.flatMap(o => o.filter(x => x.img && x.img.startsWith('data:image/png')).map(x => crypto.createHash('sha1').update(x.img).digest('hex'))));
    const most = Math.max(...during.map(o => o.length));
    const final = cell.outputs;
    const steps = (cell.source.match(/steps\s*=\s*(\d+)/) || [])[1];
    check(progress.size >= 3, `${label}: the live progress line changed while it ran (${[...progress].join(', ')})`);
    check(steps && final.some(o => o.text.includes(`step ${steps}/${steps}`)), `${label}: its line ends at step ${steps}/${steps}`);
    check(plots.size >= 2, `${label}: the loss plot was redrawn while it ran (${plots.size} different PNGs)`);
    check(final.some(o => o.img && o.img.startsWith('data:image/png')), `${label}: the plot is shown at the end`);
    check(most <= final.length, `${label}: updated in place: never more than the final ${final.length} outputs (most seen: ${most})`);
    check(!final.some(o => o.error), `${label}: no error output`);
    log(`${label}: ${samples.length} samples, final outputs: ` + final.map(o => (o.img ? '[png] ' : '') + o.text.split('\n')[0].slice(0, 60)).join(' | '));
  }

  await page.evaluate(() => Jupyter.notebook.save_notebook());
  await page.waitForFunction(() => !Jupyter.notebook.dirty, null, { timeout: 30000 }).catch(() => {});
  fs.mkdirSync(path.join(OUT, 'classic'), { recursive: true });
  // the whole notebook: the page scrolls inside #site, so the window is made as tall as the notebook first
  const tall = await page.evaluate(() => document.querySelector('#header').offsetHeight + document.querySelector('#notebook').scrollHeight);
  await page.setViewportSize({ width: 1100, height: Math.min(tall + 20, 12000) });
  await page.waitForTimeout(500);
  await page.screenshot({ path: path.join(OUT, 'classic', name.replace(/\.ipynb$/, '.png')) });
  if (trainCells.length) {
    // the first %%train cell as a reader sees it after clicking its output open (the classic Notebook folds long
    // outputs into a scrolled box): the code, the progress line, the plot and what follows it, at most 1100 px high
    const index = trainCells[0][1];
    const height = await page.evaluate(i => {
      const cell = Jupyter.notebook.get_cells().filter(c => c.cell_type === 'code')[i];
      cell.output_area.unscroll_area();
      return cell.element[0].getBoundingClientRect().height;
    }, index);
    // the page scrolls inside #site, not the window: make the window tall enough for the cell, then bring it to the top
    await page.setViewportSize({ width: 1100, height: Math.ceil(Math.min(height, 1100) + 200) });
    await page.waitForTimeout(500); // the notebook re-sizes #site on the window's resize event
    const box = await page.evaluate(async i => {
      const el = Jupyter.notebook.get_cells().filter(c => c.cell_type === 'code')[i].element[0];
      el.scrollIntoView();
      await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
      const r = el.getBoundingClientRect();
      return { x: r.left, y: r.top, width: r.width, height: Math.min(r.height, 1100) };
    }, index);
    const shot = path.join(OUT, 'classic', name.replace(/\.ipynb$/, '-train-cell.png'));
    await page.screenshot({ path: shot, clip: box });
    if (SCREENSHOT) {
      fs.copyFileSync(shot, SCREENSHOT);
      log(`screenshot of the first %%train cell: ${SCREENSHOT} (${(fs.statSync(SCREENSHOT).size / 1024).toFixed(0)} kB)`);
    }
  }
  await page.evaluate(() => Jupyter.notebook.kernel.kill());
  await page.close();
  const r = await fetch(`${base}/api/contents/${encodeURIComponent(name)}?token=${token}`);
  return (await r.json()).content;
}

// ---- JupyterLab's renderers

async function buildLabPage(dir) {
  const esbuild = await import('esbuild');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'lab-style.css'),
    "@import '@jupyterlab/rendermime/style/index.css';\n@import '@jupyterlab/outputarea/style/index.css';\n");
  await esbuild.build({
    entryPoints: { lab: path.join(HERE, 'lab-page.js'), style: path.join(dir, 'lab-style.css') }, bundle: true, outdir: dir, format: 'iife',
    minify: true, logLevel: 'error', nodePaths: [path.join(HERE, 'node_modules')],
    loader: { '.svg': 'text', '.woff': 'dataurl', '.woff2': 'dataurl', '.png': 'dataurl' },
    define: { 'process.env.NODE_ENV': '"production"' },
    // JupyterLab's style sheets import each other webpack-style, as url('~package/file.css')
    plugins: [{ name: 'tilde', setup(b) { b.onResolve({ filter: /^~/ }, a => b.resolve(a.path.slice(1), { resolveDir: a.resolveDir, kind: a.kind })); } }],
  });
  fs.writeFileSync(path.join(dir, 'index.html'),
    `<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="style.css"></head>` +
    `<body style="font-family: sans-serif; width: 1000px"><script src="lab.js"></script></body></html>`);
}

async function lab(browser, base, token, executed) {
  // served by the notebook server itself as a static path (/files/ would sandbox it to origin null), so the page has
  // the origin of the kernel's REST and WebSocket endpoints (Chromium blocks a page of unknown address space from loopback)
  const dir = path.join(OUT, 'static', 'ane4j-lab');
  await buildLabPage(dir);
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on('pageerror', e => log(`lab page error: ${e.message}`));
  page.on('console', m => process.env.ANE4J_BROWSER_DEBUG && log(`lab console: ${m.text()}`));
  await page.goto(`${base}/static/ane4j-lab/index.html`);
  await page.waitForFunction(() => window.ane4jLabReady === true, null, { timeout: 30000 });

  for (const [name, nb] of executed) {
    const cells = await page.evaluate(nb => window.ane4jLab.renderNotebook(nb), nb);
    const outputs = cells.flatMap(c => c.outputs);
    const html = outputs.filter(o => o.html);
    const tables = html.filter(o => (o.html.raw.table || 0) > 0);
    const lostRows = tables.filter(o => (o.html.rendered.tr || 0) !== o.html.raw.tr || (o.html.rendered.td || 0) !== (o.html.raw.td || 0));
    check(tables.length > 0 && lostRows.length === 0,
      `Lab, ${name} untrusted: ${tables.length} HTML tables keep every row and cell through the sanitizer` + lostRows.map(o => `\n       ${JSON.stringify(o.html)}`).join(''));
    const pngs = outputs.filter(o => o.mimes.includes('image/png'));
    check(pngs.length > 0 && pngs.every(o => o.renderedAs === 'jp-RenderedImage' && o.images.length === 1 && o.images[0].width > 100),
      `Lab, ${name}: ${pngs.length} PNG outputs render as images` + pngs.map(o => ` ${o.images.map(i => i.width + 'x' + i.height).join()}`).join(''));
    const plainOnly = outputs.filter(o => o.mimes.length && o.renderedAs === null && o.type !== 'stream' && o.type !== 'error');
    check(plainOnly.length === 0, `Lab, ${name}: every rich output found a renderer` + plainOnly.map(o => ` ${o.mimes}`).join(''));
    const stripped = html.filter(o => o.html.rawStyled > o.html.renderedStyled);
    log(`Lab, ${name}: ${html.length} HTML outputs; inline styles the sanitizer dropped: ` +
      (stripped.length ? stripped.map(o => `${o.html.rawStyled - o.html.renderedStyled} of ${o.html.rawStyled}`).join(', ') : 'none'));
    fs.mkdirSync(path.join(OUT, 'lab'), { recursive: true });
    await page.screenshot({ path: path.join(OUT, 'lab', name.replace(/\.ipynb$/, '.png')), fullPage: true });
    await page.evaluate(() => { document.body.innerHTML = ''; });
  }

  // live, in one kernel: a short %%train, then 01-mil-graphs' %%mil cell, its run (a tensor display) and its broken
  // program (an error whose caret must stay under the declared type once Lab has turned the ANSI colours into HTML)
  const mil = JSON.parse(fs.readFileSync(path.join(ROOT, 'notebooks', '01-mil-graphs.ipynb'), 'utf8')).cells;
  const source = id => [].concat(mil.find(c => c.id === id).source).join('');
  const [live, milCell, scoresCell, brokenCell] = await page.evaluate(([k, cells, t]) => window.ane4jLab.execute(k, cells, t),
    [KERNEL, [LIVE_TRAIN, source('mil-scores'), source('scores-run'), source('mil-broken')], token]);
  const updates = live.trace.filter(t => t.msg === 'update_display_data');
  const most = Math.max(0, ...live.trace.map(t => t.children));
  const progress = new Set(live.trace.map(t => (t.text.match(/step \d+\/\d+/) || [])[0]).filter(Boolean));
  check(live.status === 'ok', `Lab, live %%train through @jupyterlab/services: reply ${live.status}`);
  check(updates.length >= 3 && progress.size >= 3, `Lab, live %%train: ${updates.length} update_display_data messages change the progress line in place (${[...progress].join(', ')})`);
  check(most <= live.outputs.length && live.outputs.some(o => /step 24\/24/.test(o.text)),
    `Lab, live %%train: never more than its final ${live.outputs.length} outputs (most: ${most}), the line ends at step 24/24`);
  check(live.outputs.some(o => o.renderedAs === 'jp-RenderedImage'), 'Lab, live %%train: the loss plot is an image');
  check(milCell.status === 'ok' && milCell.outputs.some(o => o.renderedAs === 'jp-RenderedHTML' && o.html && o.html.rendered.span > 0),
    'Lab, live %%mil: the compiled program renders as HTML');
  check(scoresCell.status === 'ok' && scoresCell.outputs.some(o => /fp16/.test(o.text) && /\[1, ?1, ?4, ?4\]/.test(o.text)),
    'Lab, live: the tensor display shows dtype and shape: ' + scoresCell.outputs.map(o => o.text.split('\n')[0]).join(' | ').slice(0, 160));
  const errorText = (brokenCell.outputs.find(o => o.type === 'error') || { text: '' }).text;
  const lines = errorText.split('\n');
  const at = lines.findIndex(l => l.startsWith('line 5 │'));
  const token0 = 'tensor<fp16, [1, 2, 8, 4]>';
  const caret = at >= 0 && lines[at + 1] ? lines[at + 1].slice(lines[at].indexOf(token0), lines[at].indexOf(token0) + token0.length) : '';
  check(brokenCell.status === 'error' && caret === '^' + '~'.repeat(token0.length - 1),
    'Lab, live broken %%mil: the error renders with the caret under the declared type:\n       ' + lines.slice(0, 4).join('\n       '));
  await page.screenshot({ path: path.join(OUT, 'lab', 'live.png'), fullPage: true });
  await page.close();
}

async function main() {
  fs.mkdirSync(OUT, { recursive: true });
  if (!fs.existsSync(CHROMIUM)) {
    console.log(`[browser] skipped: no Chromium at ${CHROMIUM}; install Debian's chromium (./install.sh does)`);
    process.exit(3);
  }
  const { chromium } = await import('playwright-core');
  const work = path.join(OUT, 'notebooks');
  const names = prepare(work);
  const token = crypto.randomBytes(16).toString('hex');
  const { server, base } = await startServer(work, await freePort(), token);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  const t0 = Date.now();
  try {
    const executed = [];
    if (!process.env.ANE4J_BROWSER_LAB_ONLY) for (const name of names) executed.push([name, await classic(browser, base, token, name)]);
    await lab(browser, base, token, executed);
  } finally {
    await browser.close();
    try { process.kill(-server.pid, 'SIGTERM'); } catch { /* gone */ }
  }
  log(`browser checks took ${((Date.now() - t0) / 1000).toFixed(1)} s; screenshots in ${OUT}/classic and ${OUT}/lab`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch(e => { console.log(`FAIL ${e.message}`); console.log(`${passed} passed, ${failed + 1} failed`); process.exit(1); });
