/**
 * Copy the built extension (`../jupyter_percent_agent/labextension`) over the copy the
 * project's virtualenv serves (`../.venv/share/jupyter/labextensions/...`), so that a
 * reload of JupyterLab (or the next browser test) runs it. `jlpm dev` builds, then runs
 * this: about ten seconds, against a minute or more for `pip install -e .`.
 */
const fs = require('fs');
const path = require('path');

const here = path.resolve(__dirname, '..');
const built = path.resolve(here, '..', 'jupyter_percent_agent', 'labextension');
const venv = process.env.VIRTUAL_ENV || path.resolve(here, '..', '.venv');
const target = path.join(
  venv,
  'share',
  'jupyter',
  'labextensions',
  'jupyter-percent-agent'
);

if (!fs.existsSync(path.join(built, 'package.json'))) {
  console.error(
    `install-venv: nothing built at ${built}: run jlpm build first`
  );
  process.exit(1);
}
fs.rmSync(target, { recursive: true, force: true });
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.cpSync(built, target, { recursive: true });
fs.copyFileSync(
  path.join(here, 'install.json'),
  path.join(target, 'install.json')
);
console.log(`install-venv: ${built} -> ${target}`);
