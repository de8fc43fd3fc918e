// The page bundled by browser-test.mjs (esbuild, offline): JupyterLab's own output area, rendermime registry and
// sanitizer, with nothing of JupyterLab's application around them. Two entry points, called from the test:
//   renderNotebook(nb): every code cell's saved outputs in an untrusted OutputAreaModel (how JupyterLab shows a
//     notebook someone else executed: HTML goes through the sanitizer), then what reached the DOM;
//   execute(kernelName, code): one cell run live through @jupyterlab/services against the notebook server this page
//     is served from, in an OutputArea as JupyterLab's code cell uses it (its future handles update_display_data).
import { Sanitizer } from '@jupyterlab/apputils';
import { OutputArea, OutputAreaModel } from '@jupyterlab/outputarea';
import { RenderMimeRegistry, standardRendererFactories } from '@jupyterlab/rendermime';
import { KernelManager, ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

const rendermime = new RenderMimeRegistry({ initialFactories: standardRendererFactories, sanitizer: new Sanitizer() });

// Tag counts of an HTML string as the browser parses it (before any sanitizing) and of a rendered subtree.
function tagCounts(root) {
  const counts = {};
  for (const el of root.querySelectorAll('*')) counts[el.tagName.toLowerCase()] = (counts[el.tagName.toLowerCase()] || 0) + 1;
  return counts;
}

function styledElements(root) {
  return [...root.querySelectorAll('[style]')].filter(el => el.getAttribute('style').trim() !== '').length;
}

// What one output became in the DOM: its mime renderer's class, text, images, and for HTML what the sanitizer kept.
function describe(model, node) {
  const data = model.data || {};
  const out = { type: model.type, mimes: Object.keys(data), renderedAs: null, text: (node.innerText || '').slice(0, 2000) };
  const rendered = node.querySelector('.jp-RenderedHTMLCommon, .jp-RenderedImage, .jp-RenderedText, .jp-RenderedSVG');
  out.renderedAs = rendered ? [...rendered.classList].find(c => c.startsWith('jp-Rendered') && c !== 'jp-RenderedHTMLCommon') || 'jp-RenderedHTMLCommon' : null;
  out.images = [...node.querySelectorAll('img')].map(img => ({ src: img.src.slice(0, 22), width: img.naturalWidth, height: img.naturalHeight }));
  if (typeof data['text/html'] === 'string' && out.renderedAs === 'jp-RenderedHTML') {
    const raw = document.createElement('div');
    raw.innerHTML = data['text/html'];
    out.html = { raw: tagCounts(raw), rendered: tagCounts(rendered), rawStyled: styledElements(raw), renderedStyled: styledElements(rendered) };
  }
  return out;
}

async function settle(area) {
  // renderers are asynchronous (images decode, HTML is sanitized): wait until every image has loaded
  for (let i = 0; i < 100; i++) {
    const imgs = [...area.node.querySelectorAll('img')];
    if (imgs.every(img => img.complete && img.naturalWidth > 0)) return;
    await new Promise(r => setTimeout(r, 20));
  }
}

function outputsOf(area) {
  const kids = [...area.node.querySelectorAll(':scope > .jp-OutputArea-child')];
  return kids.map((kid, i) => describe({ type: area.model.get(i).type, data: area.model.get(i).data }, kid));
}

window.ane4jLab = {
  async renderNotebook(nb) {
    const cells = [];
    for (const cell of nb.cells) {
      if (cell.cell_type !== 'code') continue;
      const model = new OutputAreaModel({ values: cell.outputs, trusted: false });
      const area = new OutputArea({ model, rendermime });
      Widget.attach(area, document.body);
      await settle(area);
      cells.push({ source: [].concat(cell.source).join('').slice(0, 80), tags: (cell.metadata || {}).tags || [], outputs: outputsOf(area) });
    }
    return cells;
  },

  // Runs the cells one after another in one kernel, each in its own OutputArea; per cell: the reply's status, a trace
  // of the output area after every IOPub message, and what its outputs became in the DOM.
  async execute(kernelName, cells, token) {
    const serverSettings = ServerConnection.makeSettings({ baseUrl: location.origin + '/', wsUrl: location.origin.replace(/^http/, 'ws') + '/', token });
    const manager = new KernelManager({ serverSettings });
    const kernel = await manager.startNew({ name: kernelName });
    const results = [];
    try {
      for (const code of cells) {
        const model = new OutputAreaModel({ trusted: true });
        const area = new OutputArea({ model, rendermime });
        Widget.attach(area, document.body);
        // after every IOPub message of the cell: how many outputs the area holds and their text/plain
        const trace = [];
        const onMessage = (_, msg) => queueMicrotask(() => trace.push({ msg: msg.header.msg_type, outputs: area.model.length,
          children: area.node.querySelectorAll(':scope > .jp-OutputArea-child').length,
          text: [...Array(area.model.length).keys()].map(i => String(area.model.get(i).data['text/plain'] || '').slice(0, 160)).join('\n') }));
        kernel.iopubMessage.connect(onMessage);
        const reply = await OutputArea.execute(code, area, { session: { kernel } });
        await new Promise(r => setTimeout(r, 300));
        await settle(area);
        kernel.iopubMessage.disconnect(onMessage);
        results.push({ status: reply && reply.content.status, trace, outputs: outputsOf(area) });
      }
      return results;
    } finally {
      await kernel.shutdown();
    }
  },
};
window.ane4jLabReady = true;
