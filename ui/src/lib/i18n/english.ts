// The English catalogue, imported statically so that a message key is a type: `t('library.title')`
// with a key that is not here fails svelte-check. One JSON file per area of the app.

import app from './catalogues/en/app.json';
import settings from './catalogues/en/settings.json';
import errors from './catalogues/en/errors.json';
import format from './catalogues/en/format.json';
import library from './catalogues/en/library.json';
import record from './catalogues/en/record.json';
import convert from './catalogues/en/convert.json';
import compare from './catalogues/en/compare.json';
import models from './catalogues/en/models.json';
import jobs from './catalogues/en/jobs.json';
import clean from './catalogues/en/clean.json';
import cover from './catalogues/en/cover.json';
import live from './catalogues/en/live.json';
import train from './catalogues/en/train.json';
import shortcuts from './catalogues/en/shortcuts.json';

export const ENGLISH = { app, settings, errors, format, library, record, convert, compare, models, jobs, clean, cover, live, train, shortcuts };

type Catalogue = typeof ENGLISH;
/** `area.key`, for every key of every English area file. */
export type MessageKey = {
  [Area in keyof Catalogue]: `${Area & string}.${keyof Catalogue[Area] & string}`;
}[keyof Catalogue];
