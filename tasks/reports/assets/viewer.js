// rpbench sample viewer. Everything model-written is drawn with textContent: it is shown, never run.
// State lives in the location hash (q, page, f.<facet>, sample, item), so every view has a link.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('viewer-data').textContent);
  var samples = data.samples;
  var byId = {};
  samples.forEach(function (s) {
    byId[s.id] = s;
    s._text = [s.id, s.item, s.model, s.title, s.score].concat(
      Object.keys(s.facets).map(function (k) { return s.facets[k]; }),
      s.parts.map(function (p) { return p.label + ' ' + p.text; })).join('\n').toLowerCase();
  });
  var facetNames = [];
  samples.forEach(function (s) {
    Object.keys(s.facets).forEach(function (k) { if (facetNames.indexOf(k) < 0) { facetNames.push(k); } });
  });
  var app = document.getElementById('app');

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function readHash() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ''));
    var state = {q: params.get('q') || '', page: parseInt(params.get('page') || '1', 10) || 1, facets: {},
                 sample: params.get('sample'), item: params.get('item')};
    facetNames.forEach(function (k) { var v = params.get('f.' + k); if (v) { state.facets[k] = v; } });
    return state;
  }

  function hashOf(state) {
    var params = new URLSearchParams();
    if (state.q) { params.set('q', state.q); }
    Object.keys(state.facets).forEach(function (k) { if (state.facets[k]) { params.set('f.' + k, state.facets[k]); } });
    if (state.page > 1) { params.set('page', String(state.page)); }
    if (state.sample) { params.set('sample', state.sample); }
    if (state.item) { params.set('item', state.item); }
    return '#' + params.toString();
  }

  function go(state) { location.hash = hashOf(state); }

  function matches(s, state) {
    for (var k in state.facets) {
      if (state.facets[k] && s.facets[k] !== state.facets[k]) { return false; }
    }
    if (!state.q) { return true; }
    return state.q.toLowerCase().split(/\s+/).filter(Boolean).every(function (w) { return s._text.indexOf(w) >= 0; });
  }

  function header(state) {
    var head = el('header');
    head.appendChild(el('h1', {}, data.title));
    var links = el('div');
    Object.keys(data.links).forEach(function (label) { links.appendChild(el('a', {href: data.links[label]}, label)); });
    if (state.sample || state.item) {
      var back = el('a', {href: hashOf({q: state.q, page: state.page, facets: state.facets}), id: 'back'},
                    'back to the list');
      links.appendChild(back);
    }
    head.appendChild(links);
    var controls = el('div', {'class': 'controls'});
    var search = el('input', {type: 'search', id: 'search', placeholder: 'search every text (words, any order)'});
    search.value = state.q;
    search.addEventListener('change', function () {
      go({q: search.value.trim(), page: 1, facets: state.facets});
    });
    controls.appendChild(search);
    facetNames.forEach(function (k) {
      var values = [];
      samples.forEach(function (s) { var v = s.facets[k]; if (v !== undefined && values.indexOf(v) < 0) { values.push(v); } });
      values.sort();
      var label = el('label', {}, k + ' ');
      var select = el('select', {'data-facet': k});
      select.appendChild(el('option', {value: ''}, 'all'));
      values.forEach(function (v) {
        var option = el('option', {value: v}, v);
        if (state.facets[k] === v) { option.selected = true; }
        select.appendChild(option);
      });
      select.addEventListener('change', function () {
        var facets = Object.assign({}, state.facets);
        facets[k] = select.value;
        go({q: state.q, page: 1, facets: facets});
      });
      label.appendChild(select);
      controls.appendChild(label);
    });
    head.appendChild(controls);
    return head;
  }

  function drawPart(p) {
    var box = el('div', {'class': p.kind === 'turn' ? 'turn' : 'part'});
    if (p.kind === 'note') {
      box.appendChild(el('div', {'class': 'note'}, (p.label ? p.label + ': ' : '') + p.text));
      return box;
    }
    box.appendChild(el('div', {'class': 'label'}, p.label));
    box.appendChild(el('div', {'class': 'text'}, p.text));
    return box;
  }

  function drawSample(s, withCompare) {
    var box = el('section', {'class': 'sample', 'data-sample': s.id});
    box.appendChild(el('h2', {}, s.title));
    var meta = el('div', {'class': 'meta'});
    meta.appendChild(el('span', {'class': 'score'}, s.model + ' - ' + s.score));
    meta.appendChild(document.createTextNode('  ' + Object.keys(s.facets).filter(function (k) {
      return k !== 'model'; }).map(function (k) { return k + ': ' + s.facets[k]; }).join(' | ') + '  '));
    meta.appendChild(el('a', {href: '#sample=' + encodeURIComponent(s.id)}, 'link'));
    var others = samples.filter(function (o) { return o.item === s.item; }).length;
    if (withCompare && others > 1) {
      meta.appendChild(document.createTextNode(' '));
      meta.appendChild(el('a', {href: '#item=' + encodeURIComponent(s.item), 'class': 'compare'},
                          'all ' + others + ' answers to this item side by side'));
    }
    box.appendChild(meta);
    // Parts of kind 'pair' that follow one another sit side by side (two replies to one turn).
    var pair = null;
    s.parts.forEach(function (p) {
      if (p.kind !== 'pair') { pair = null; box.appendChild(drawPart(p)); return; }
      if (!pair) { pair = el('div', {'class': 'pair'}); box.appendChild(pair); }
      pair.appendChild(drawPart(p));
    });
    return box;
  }

  function drawList(state, main) {
    var shown = samples.filter(function (s) { return matches(s, state); });
    var pages = Math.max(1, Math.ceil(shown.length / data.pageSize));
    var page = Math.min(Math.max(state.page, 1), pages);
    var pager = el('div', {'class': 'pager', id: 'count'},
                   shown.length + ' of ' + samples.length + ' samples, page ' + page + ' of ' + pages);
    [['previous', page - 1], ['next', page + 1]].forEach(function (b) {
      var button = el('button', {type: 'button'}, b[0]);
      button.disabled = b[1] < 1 || b[1] > pages;
      button.addEventListener('click', function () { go({q: state.q, page: b[1], facets: state.facets}); });
      pager.appendChild(button);
    });
    main.appendChild(pager);
    if (!shown.length) { main.appendChild(el('div', {'class': 'empty'}, 'No sample matches.')); return; }
    var table = el('table', {'class': 'samples'});
    var head = el('tr');
    // The model is a facet (for its filter) and a column of its own: the other facets follow it, once each.
    var columns = facetNames.filter(function (k) { return k !== 'model'; });
    ['sample', 'model', 'score'].concat(columns).forEach(function (h) { head.appendChild(el('th', {}, h)); });
    table.appendChild(head);
    shown.slice((page - 1) * data.pageSize, page * data.pageSize).forEach(function (s) {
      var row = el('tr', {'data-sample': s.id});
      row.appendChild(el('td', {}, s.title));
      row.appendChild(el('td', {}, s.model));
      row.appendChild(el('td', {}, s.score));
      columns.forEach(function (k) { row.appendChild(el('td', {}, s.facets[k] === undefined ? '' : s.facets[k])); });
      row.addEventListener('click', function () {
        go({q: state.q, page: page, facets: state.facets, sample: s.id});
      });
      table.appendChild(row);
    });
    main.appendChild(table);
  }

  function render() {
    var state = readHash();
    app.textContent = '';
    app.appendChild(header(state));
    var main = el('main');
    if (state.sample) {
      var s = byId[state.sample];
      main.appendChild(s ? drawSample(s, true) : el('div', {'class': 'empty'}, 'No sample ' + state.sample + '.'));
    } else if (state.item) {
      var same = samples.filter(function (o) { return o.item === state.item; });
      var grid = el('div', {'class': 'side', id: 'side-by-side'});
      same.forEach(function (o) { grid.appendChild(drawSample(o, false)); });
      main.appendChild(same.length ? grid : el('div', {'class': 'empty'}, 'No item ' + state.item + '.'));
    } else {
      drawList(state, main);
    }
    app.appendChild(main);
    document.body.setAttribute('data-ready', '1');
    // Which view is drawn: location.hash changes at once but hashchange redraws later, so a reader
    // (a test, a screenshot) waits for this to match the hash before it reads the rows.
    document.body.setAttribute('data-shown', location.hash);
  }

  window.addEventListener('hashchange', render);
  render();
})();
