import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** One markdown document of the corpus; its id is the file name without `.md`. */
export interface CorpusDocument {
  id: string;
  title: string;
  content: string;
}

/** The markdown documents the read tools search, read from a folder on every call so edits show at once. */
export interface Corpus {
  folder: string;
  documents(): CorpusDocument[];
}

/** Opens the corpus folder; a missing folder is an error naming it. */
export function openCorpus(folder: string): Corpus {
  return {
    folder,
    documents() {
      let names: string[];
      try {
        names = readdirSync(folder)
          .filter((name) => name.endsWith('.md'))
          .sort();
      } catch (error) {
        throw new Error(`corpus folder ${folder} cannot be read: ${(error as Error).message}`, { cause: error });
      }
      return names.map((name) => {
        const content = readFileSync(path.join(folder, name), 'utf8');
        const heading = /^#\s+(.+)$/m.exec(content);
        const id = name.slice(0, -'.md'.length);
        return { id, title: heading ? heading[1].trim() : id, content };
      });
    },
  };
}
