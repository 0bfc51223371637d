/**
 * The extension's strings go through JupyterLab's translator (`ITranslator`, optional, as
 * in core packages): each plugin that shows text hands over the translator it was given,
 * and every module reads the bundle of this extension's domain when it makes its text.
 */

import {
  ITranslator,
  nullTranslator,
  TranslationBundle
} from '@jupyterlab/translation';

/** The gettext domain of the extension's strings. */
export const TRANSLATION_DOMAIN = 'jupyter-percent-agent';

let bundle: TranslationBundle = nullTranslator.load(TRANSLATION_DOMAIN);

/** Use `translator` for the extension's strings from now on (no translator: as written). */
export function setTranslator(translator: ITranslator | null): void {
  bundle = (translator ?? nullTranslator).load(TRANSLATION_DOMAIN);
}

/** The translation bundle of the extension's strings. */
export function trans(): TranslationBundle {
  return bundle;
}
