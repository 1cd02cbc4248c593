import { Parser } from 'htmlparser2';

/** The formats the search index reads; every other file is skipped and counted. */
export type DocumentFormat = 'markdown' | 'text' | 'html';

/** One section of a document: its heading and where its text lies in the document's text. */
export interface DocumentSection {
  index: number;
  /** The heading's text, or the document's title for the text before the first heading. */
  heading: string;
  /** Heading level 1–6, 0 for the text before the first heading and for plain text. */
  level: number;
  start: number;
  end: number;
}

/** A file's text as the index keeps it: the text the model reads, its title and its sections. */
export interface DocumentText {
  title: string;
  text: string;
  sections: DocumentSection[];
}

const FORMATS: Record<string, DocumentFormat> = {
  '.md': 'markdown',
  '.markdown': 'markdown',
  '.txt': 'text',
  '.text': 'text',
  '.html': 'html',
  '.htm': 'html',
};

/** The format of a file by its extension (lower-cased, with the dot), or undefined for a file the index skips. */
export function formatOf(extension: string): DocumentFormat | undefined {
  return FORMATS[extension.toLowerCase()];
}

/** A heading or title with Markdown's inline code marks and link targets removed. */
function cleanHeading(raw: string): string {
  return raw
    .replace(/`+/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
}

const ATX_HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** Sections from heading positions; the text before the first heading is a section only when it holds more than blanks. */
function sectionsFrom(text: string, headings: Array<{ heading: string; level: number; start: number }>, title: string): DocumentSection[] {
  const sections: DocumentSection[] = [];
  const firstStart = headings[0]?.start ?? text.length;
  if (headings.length === 0 || text.slice(0, firstStart).trim() !== '') {
    sections.push({ index: 0, heading: title, level: 0, start: 0, end: firstStart });
  }
  headings.forEach((heading, position) => {
    const end = headings[position + 1]?.start ?? text.length;
    sections.push({ index: sections.length, heading: heading.heading, level: heading.level, start: heading.start, end });
  });
  return sections;
}

/** A Markdown document's sections by its ATX headings (`#` … `######`), ignoring lines inside fenced code. */
export function markdownText(text: string, fallbackTitle: string): DocumentText {
  const headings: Array<{ heading: string; level: number; start: number }> = [];
  let fence: string | undefined;
  let offset = 0;
  for (const line of text.split('\n')) {
    const fenceMark = FENCE.exec(line)?.[1];
    if (fenceMark && (fence === undefined || (fenceMark[0] === fence[0] && fenceMark.length >= fence.length))) {
      fence = fence === undefined ? fenceMark : undefined;
    } else if (fence === undefined) {
      const heading = ATX_HEADING.exec(line);
      if (heading) headings.push({ heading: cleanHeading(heading[2]) || fallbackTitle, level: heading[1].length, start: offset });
    }
    offset += line.length + 1;
  }
  const title = headings.find((heading) => heading.level === 1)?.heading ?? headings[0]?.heading ?? fallbackTitle;
  return { title, text, sections: sectionsFrom(text, headings, title) };
}

/** A plain text file: one section; its title is its first line when that is short, else the fallback. */
export function plainText(text: string, fallbackTitle: string): DocumentText {
  const firstLine =
    text
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? '';
  const title = firstLine !== '' && firstLine.length <= 100 ? firstLine : fallbackTitle;
  return { title, text, sections: [{ index: 0, heading: title, level: 0, start: 0, end: text.length }] };
}

const SKIPPED_ELEMENTS = new Set(['script', 'style', 'noscript', 'template', 'svg', 'head']);
const BLOCK_ELEMENTS = new Set([
  'address', 'article', 'aside', 'blockquote', 'br', 'dd', 'details', 'div', 'dl', 'dt', 'figcaption', 'figure', 'footer',
  'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'li', 'main', 'nav', 'ol', 'p', 'pre', 'section', 'summary',
  'table', 'td', 'th', 'tr', 'ul',
]); // prettier-ignore

/**
 * An HTML document's visible text, extracted with htmlparser2 (scripts, styles and the head left
 * out, block elements on lines of their own), with a section at each `h1`–`h6`; its title is the
 * `<title>`, else the first heading, else the fallback.
 */
export function htmlText(html: string, fallbackTitle: string): DocumentText {
  let text = '';
  let skipping = 0;
  let inTitle = false;
  let pageTitle = '';
  let open: { level: number; start: number; heading: string } | undefined;
  const headings: Array<{ heading: string; level: number; start: number }> = [];
  const newline = () => {
    if (text !== '' && !text.endsWith('\n')) text += '\n';
  };
  const parser = new Parser(
    {
      onopentag(name) {
        if (name === 'title') inTitle = true;
        if (SKIPPED_ELEMENTS.has(name)) skipping++;
        if (skipping > 0) return;
        if (BLOCK_ELEMENTS.has(name)) newline();
        const level = /^h([1-6])$/.exec(name);
        if (level) open = { level: Number(level[1]), start: text.length, heading: '' };
      },
      ontext(data) {
        if (inTitle) pageTitle += data;
        if (skipping > 0) return;
        const piece = data.replace(/\s+/g, ' ');
        const trimmed = text === '' || text.endsWith('\n') ? piece.trimStart() : piece;
        text += trimmed;
        if (open) open.heading += data;
      },
      onclosetag(name) {
        if (name === 'title') inTitle = false;
        if (SKIPPED_ELEMENTS.has(name)) skipping = Math.max(0, skipping - 1);
        if (skipping > 0) return;
        if (open && name === `h${open.level}`) {
          headings.push({ heading: cleanHeading(open.heading) || fallbackTitle, level: open.level, start: open.start });
          open = undefined;
        }
        if (BLOCK_ELEMENTS.has(name)) newline();
      },
    },
    { decodeEntities: true },
  );
  parser.end(html);
  const title = cleanHeading(pageTitle) || headings[0]?.heading || fallbackTitle;
  return { title, text, sections: sectionsFrom(text, headings, title) };
}

/** A file's text, title and sections by its format. */
export function documentText(format: DocumentFormat, content: string, fallbackTitle: string): DocumentText {
  if (format === 'markdown') return markdownText(content, fallbackTitle);
  if (format === 'html') return htmlText(content, fallbackTitle);
  return plainText(content, fallbackTitle);
}

/** A section's text as the index's body column holds it: the heading line and HTML comments left out. */
export function indexedBody(format: DocumentFormat, text: string, section: DocumentSection): string {
  let body = text.slice(section.start, section.end);
  if (section.level > 0) body = body.slice(body.indexOf('\n') + 1 || body.length);
  if (format === 'markdown') body = body.replace(/<!--[\s\S]*?-->/g, ' ');
  return body;
}
