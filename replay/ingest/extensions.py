"""The file-extension vocabulary: which final extension a pseudonymized path component keeps.

A path component is pseudonymized whole (`replay.ingest.keys.Keyring.path`, the anonymizer's
`replay.privacy.paths`); only a final extension of ``KNOWN_EXTENSIONS`` is kept, lower-cased.
The part after the last dot of a dotted user name, a host or a file named ``key.<secret>`` is
no extension. It sits below both `keys` and `identifiers`, which re-exports it.
"""

from __future__ import annotations

# File types seen in coding sessions: source, config, data, docs, build and binary files.
KNOWN_EXTENSIONS = frozenset("""
    py pyi pyx pxd pyc ipynb js mjs cjs jsx ts mts cts tsx vue svelte astro json jsonl json5 jsonc ndjson
    md mdx markdown rst txt adoc tex bib org html htm xhtml css scss sass less styl xml xsd xsl svg
    yaml yml toml ini cfg conf config env properties lock lockb
    rs go java kt kts scala groovy gradle clj cljs cljc edn c h cc cpp cxx hpp hh hxx m mm swift cs fs fsx
    vb rb erb rake gemspec php pl pm lua r jl dart ex exs erl hrl hs elm ml mli nim zig v sol
    sh bash zsh fish ps1 psm1 bat cmd mk cmake make ninja bazel bzl nix tf tfvars hcl
    sql csv tsv parquet arrow feather avro orc db sqlite sqlite3 duckdb h5 hdf5 npy npz pkl pickle pt pth
    onnx safetensors ckpt bin dat log out err tmp bak orig rej diff patch swp
    png jpg jpeg gif webp bmp ico tif tiff heic avif psd pdf doc docx xls xlsx ppt pptx odt ods key pages
    mp3 mp4 wav ogg flac mov avi mkv webm ttf otf woff woff2 eot
    zip gz tgz tar bz2 xz zst 7z rar whl egg jar war ear deb rpm dmg iso apk
    so dll dylib exe o a lib obj wasm class map pem crt cer csr der p12 pfx pub asc gpg sig
    proto graphql gql thrift capnp dockerfile containerfile gitignore gitattributes editorconfig
    prisma tmpl tpl j2 jinja hbs mustache ejs pug liquid
""".split())


def split_extension(comp: str) -> tuple[str, str]:
    """(stem, extension with its dot, as written) of a path component; the extension is ""
    unless it is in ``KNOWN_EXTENSIONS`` in any case (then the stem is not empty)."""
    stem, dot, ext = comp.rpartition(".")
    if dot and stem and ext.lower() in KNOWN_EXTENSIONS:
        return stem, "." + ext
    return comp, ""
