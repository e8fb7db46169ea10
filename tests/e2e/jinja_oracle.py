"""The reference Jinja2 environment, built exactly as transformers'
_compile_jinja_template builds it (used by gen_jinja_cases.py and the live cross-check).

Run with Debian's /usr/bin/python3 (python3-jinja2 3.1.x is the oracle).
"""

import json
from datetime import datetime, timezone

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

# 2024-07-26 00:00:00 UTC, the instant the corpus renderings used.
FIXED_EPOCH = 1721952000


class TemplateError(Exception):
    pass


def make_env(epoch=FIXED_EPOCH):
    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(template, variables, env=None):
    """-> ("ok", text) or ("error", ExceptionTypeName)."""
    env = env or make_env()
    try:
        return "ok", env.from_string(template).render(**variables)
    except jinja2.TemplateSyntaxError:
        return "error", "TemplateSyntaxError"
    except Exception as e:  # noqa: BLE001 - the type is the oracle's answer
        return "error", type(e).__name__


JINJA2_VERSION = jinja2.__version__
