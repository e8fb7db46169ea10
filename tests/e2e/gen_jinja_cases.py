"""Generate tests/data/chat/jinja_cases.json: one case per Jinja statement, expression,
test, filter and method facet implements, with the expected output computed by the
oracle (Debian /usr/bin/python3 + python3-jinja2, environment of jinja_oracle.py).

    /usr/bin/python3 tests/e2e/gen_jinja_cases.py

The C unit test tests/unit/test_chat_jinja.c renders every case and compares; the e2e
test test_chat_jinja_live.py re-runs the oracle live on the same cases to prove the
stored expectations are still what Jinja2 says.
"""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import jinja_oracle  # noqa: E402

MSGS = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi there"},
    {"role": "assistant", "content": "Hello!", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}}]},
    {"role": "tool", "content": "{\"temp\": 21.5}"},
]
V = {"messages": MSGS, "n": 7, "f": 2.5, "s": "  Hello World  ", "l": [3, 1, 2], "d": {"b": 1, "a": 2},
     "e": [], "t": True, "z": None, "words": ["apple", "Banana", "cherry"], "u": "héllo wörld",
     "items": [{"name": "x", "v": 2, "ok": True}, {"name": "y", "v": 1, "ok": False}, {"name": "z", "v": 3}]}

CASES = [
    # ---- text, output, comments, whitespace control
    ("text", "plain text", {}),
    ("text", "a\nb\n", {}),
    ("text", "a\r\nb\r\n", {}),
    ("output", "{{ n }} {{ f }} {{ s }} {{ t }} {{ z }}", V),
    ("output", "{{ l }} {{ d }} {{ (1, 'a') }} {{ (1,) }} {{ () }}", V),
    ("output", "{{ undefined_var }}|{{ d.missing }}|", V),
    ("comment", "a{# comment #}b", {}),
    ("comment", "a\n  {# comment #}\nb", {}),
    ("comment", "a  {#- comment -#}  b", {}),
    ("ws", "a  {{- n -}}  b", V),
    ("ws", "x\n  {% if t %}\n    yes\n  {% endif %}\ny", V),
    ("ws", "x\n  {%- if t %}\n    yes\n  {%- endif %}\ny", V),
    ("ws", "x\n  {%+ if t %}\n    yes\n  {% endif +%}\ny", V),
    ("ws", "{% if t -%}  \n\n  a  {%- endif %}", V),
    ("ws", "  {{ n }}\n  {% set x = 1 %}\n{{ x }}", V),
    ("ws", "{% for m in messages %}\n  {{ m.role }}\n{% endfor %}\n", V),
    ("ws", "a {% if t %}b{% endif %}\nc", V),
    ("raw", "{% raw %}{{ not rendered }}{% endraw %}", {}),
    # ---- if / elif / else
    ("if", "{% if n > 5 %}big{% elif n > 2 %}mid{% else %}small{% endif %}", V),
    ("if", "{% if n > 50 %}big{% elif n > 2 %}mid{% else %}small{% endif %}", V),
    ("if", "{% if e %}nonempty{% else %}empty{% endif %}", V),
    ("if", "{% if z is none and not e %}ok{% endif %}", V),
    # ---- for
    ("for", "{% for x in l %}{{ x }},{% endfor %}", V),
    ("for", "{% for x in e %}{{ x }}{% else %}none{% endfor %}", V),
    ("for", "{% for x in l %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }};{% endfor %}", V),
    ("for", "{% for x in l %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", V),
    ("for", "{% for x in l %}{{ loop.cycle('a', 'b') }}{% endfor %}", V),
    ("for", "{% for x in [1, 1, 2, 3, 3] %}{{ loop.changed(x) }},{% endfor %}|{% for x in [1, 1, 2] %}{{ loop.changed(x, loop.index) }}{% endfor %}|{% for x in [1, 1] %}{{ loop.changed() }}{% endfor %}", V),
    ("for", "{% for x in l if x > 1 %}{{ x }}:{{ loop.length }},{% endfor %}", V),
    ("for", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", V),
    ("for", "{% for k in d %}{{ k }}{% endfor %}", V),
    ("for", "{% for c in 'abc' %}{{ c }}-{% endfor %}", V),
    ("for", "{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}", V),
    ("for", "{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}", V),
    ("for", "{% for x in l %}{% if x == 1 %}{% break %}{% endif %}{{ x }}{% endfor %}", V),
    ("for", "{% for x in l %}{% for y in l %}{{ loop.index }}{% endfor %}|{{ loop.index }} {% endfor %}", V),
    ("for", "{% for i in range(3) %}{% if i == 0 %}{% set y = 5 %}{% endif %}{{ y }},{% endfor %}", V),
    ("for", "{% set x = 1 %}{% for i in range(3) %}{{ x }}{% set x = x + 1 %}{{ x }},{% endfor %}{{ x }}", V),
    ("for", "{% for m in messages %}{{ m.role }}{% if not loop.last %}, {% endif %}{% endfor %}", V),
    ("for", "{% for x in undefined_var %}x{% else %}empty{% endfor %}", V),
    ("for", "{% for x in n %}x{% endfor %}", V),
    ("for", "{% for a, b in l %}{% endfor %}", V),
    # ---- set, block set, namespace
    ("set", "{% set x = n * 2 %}{{ x }}", V),
    ("set", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", V),
    ("set", "{% set x %}inner {{ n }}{% endset %}[{{ x }}]", V),
    ("set", "{% set x | upper %}inner {{ n }}{% endset %}[{{ x }}]", V),
    ("namespace", "{% set ns = namespace(found=false, count=0) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.found = true %}{% endif %}{% set ns.count = ns.count + 1 %}{% endfor %}{{ ns.found }} {{ ns.count }}", V),
    ("namespace", "{% set ns = namespace() %}{% set ns.x %}block{% endset %}{{ ns.x }} {{ ns.missing is defined }}", V),
    ("namespace", "{% set x = 1 %}{% set x.y = 2 %}", V),
    ("namespace", "{% set ns = namespace(a=1) %}{{ ns }}", V),
    # ---- macro / call / filter blocks
    ("macro", "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', 'Hi') }} {{ greet(greeting='Yo', name='Cy') }}", V),
    ("macro", "{% macro m(a, b) %}[{{ a }}|{{ b }}]{% endmacro %}{{ m(1) }}", V),
    ("macro", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", V),
    ("macro", "{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}", V),
    ("macro", "{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k * fact(k - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", V),
    ("macro", "{% macro m() %}  body  {% endmacro %}[{{ m() }}]{{ m()|length }}", V),
    # a body that reads varargs / kwargs takes extra positional / unknown keyword arguments
    ("macro", "{% macro m(a, b='d') %}{{ a }}{{ b }}{{ varargs }}{% endmacro %}{{ m(1) }}|{{ m(1, 2, 3, 'x') }}", V),
    ("macro", "{% macro m() %}{% for v in varargs %}[{{ v }}]{% endfor %}{{ varargs|length }}{% endmacro %}{{ m(1, 2) }}", V),
    ("macro", "{% macro m(a) %}{{ kwargs }}|{{ kwargs.x }}|{{ varargs }}{% endmacro %}{{ m(1, 5, x=2, y='z') }}{{ m(a=0) }}", V),
    ("macro", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, x=2) }}", V),
    ("macro", "{% macro m(a) %}{% macro g() %}{{ varargs }}{% endmacro %}{{ g() }}{% endmacro %}{{ m(1, 2) }}", V),
    ("call", "{% macro m(a) %}{{ caller(7, 8) }}{% endmacro %}{% call m(1) %}{{ varargs }}{% endcall %}", V),
    # jinja2's Macro.__call__ binding: a keyword naming a positionally given parameter goes
    # to kwargs; a stored or parameter varargs/kwargs is not caught; caller= is a keyword
    ("macro", "{% macro m(a, b) %}{{ a }}{{ b }}{{ kwargs }}{% endmacro %}{{ m(1, a=2) }}|{{ m(1, b=2) }}", V),
    ("macro", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, a=2) }}", V),
    ("macro", "{% macro m() %}{% set varargs = (9,) %}{{ varargs }}{% endmacro %}{{ m() }}{{ m(1) }}", V),
    ("macro", "{% macro m() %}{% for varargs in [1] %}{{ varargs }}{% endfor %}{% endmacro %}{{ m(1, 2) }}", V),
    ("macro", "{% macro m(varargs) %}{{ varargs }}{% endmacro %}{{ m(1, 2) }}", V),
    ("macro", "{% macro m(kwargs) %}{{ kwargs }}{% endmacro %}{{ m(1, z=2) }}", V),
    ("macro", "{% macro m() %}{{ caller }}{{ kwargs }}{% endmacro %}{{ m(caller=1) }}", V),
    ("macro", "{% macro m() %}[{{ caller() }}]{% endmacro %}{{ m() }}", V),
    ("call", "{% macro m() %}x{% endmacro %}{% call m() %}y{% endcall %}", V),
    ("call", "{% macro m(caller=none) %}[{{ caller() }}]{% endmacro %}{% call m() %}y{% endcall %}", V),
    ("call", "{% macro m() %}{{ kwargs }}{{ caller() }}{% endmacro %}{% call m(q=1) %}B{% endcall %}", V),
    ("call", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ n }}{% endcall %}", V),
    ("call", "{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}{% call(item) each(l) %}<{{ item }}>{% endcall %}", V),
    ("filterblock", "{% filter upper %}shout {{ n }}{% endfilter %}", V),
    ("filterblock", "{% filter trim | replace('a', 'o') %}  banana  {% endfilter %}", V),
    ("with", "{% set a = 5 %}{% with a = 1, b = a %}{{ a }}{{ b }}{% endwith %}{{ a }}", V),
    ("with", "{% with %}{% set q = 1 %}{{ q }}{% endwith %}[{{ q }}]", V),
    ("with", "{% for x in l %}{% with y = x * 2 %}{% if y > 2 %}{% break %}{% endif %}{{ y }}{% endwith %}{% endfor %}", V),
    # ---- literals
    ("literal", "{{ 'single' }} {{ \"double\" }} {{ 'a\\'b' }} {{ \"tab\\tnl\\n\" }} {{ '\\u00e9\\x41' }} {{ 'a' 'b' }}", {}),
    ("literal", "{{ 42 }} {{ -7 }} {{ 1_000 }} {{ 3.14 }} {{ 1e3 }} {{ 2.5e-3 }} {{ 1.0 }} {{ 1e16 }} {{ 0.1 + 0.2 }}", {}),
    ("literal", "{{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1_000_000 }} {{ 0 }} {{ 0X1f }}", {}),
    ("literal", "{{ 123456789012345678901234567890.5 }} {{ 0.%s1e300 }} {{ %s.25 }}" % ("0" * 300, "9" * 200), {}),
    ("literal", "{{ true }} {{ True }} {{ false }} {{ none }} {{ None }}", {}),
    ("literal", "{{ [1, 'two', [3]] }} {{ {'k': 'v', 'n': 1} }} {{ [] }} {{ {} }} {{ [1, 2,] }}", {}),
    ("literal", "{{ ['it\\'s', 'say \"hi\"', 'both \\' \"', 'nl\\n', '\\x01', 'é'] }}", {}),
    # ---- attribute / item access, slices
    ("access", "{{ messages[0].role }} {{ messages[0]['content'] }} {{ messages[-1].role }} {{ d.a }} {{ l.0 }}", V),
    ("access", "{{ messages[2].tool_calls[0].function.arguments.city }}", V),
    ("access", "{{ d.missing.deeper }}", V),
    ("access", "{{ undefined_var.attr }}", V),
    ("access", "{{ l[10] }}|{{ z.attr }}|", V),
    ("slice", "{{ l[1:] }} {{ l[:2] }} {{ l[::-1] }} {{ l[-2:] }} {{ l[::2] }} {{ l[5:] }} {{ l[-10:1] }}", V),
    ("slice", "{{ s[2:7] }} {{ 'abcdef'[::-2] }} {{ u[1:4] }} {{ u[::-1] }}", V),
    ("slice", "{{ messages[1:]|length }} {{ (1, 2, 3)[1:] }}", V),
    ("slice", "{{ l[::0] }}", V),
    # ---- arithmetic
    ("math", "{{ 7 + 3 }} {{ 7 - 3 }} {{ 7 * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }}", {}),
    ("math", "{{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2 ** -1 }} {{ 2 ** 0.5 }}", {}),
    ("math", "{{ 1 + 2.0 }} {{ true + 1 }} {{ 10 / 4 }} {{ 4 / 2 }} {{ 2 ** 3 ** 2 }} {{ 1 + 2 * 3 - 4 }}", {}),
    ("math", "{{ 'ab' * 3 }} {{ [1] * 3 }} {{ 'a' + 'b' }} {{ [1] + [2] }}", {}),
    ("math", "{{ 1 / 0 }}", {}),
    ("math", "{{ 1 // 0 }}", {}),
    ("math", "{{ 'a' + 1 }}", {}),
    ("math", "{{ undefined_var + 1 }}", {}),
    ("math", "{{ -'a' }}", {}),
    ("math", "{{ 1e308 * 10 }} {{ -(1e308 * 10) }}", {}),
    ("concat", "{{ 'a' ~ 1 ~ none ~ true ~ 2.0 ~ undefined_var ~ [1] }}", {}),
    # ---- comparisons, in, logic
    ("compare", "{{ 1 == 1.0 }} {{ 1 != 2 }} {{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 2 }} {{ 3 >= 4 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}", {}),
    ("compare", "{{ true == 1 }} {{ none == none }} {{ 'a' == 'a' }} {{ {'a': 1} == {'a': 1} }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}", {}),
    ("compare", "{{ 1 < 'a' }}", {}),
    ("in", "{{ 2 in l }} {{ 5 not in l }} {{ 'ell' in s }} {{ 'a' in d }} {{ 'zz' in d }} {{ 'x' in undefined_var }}", V),
    ("in", "{{ 1 in 'abc' }}", V),
    ("logic", "{{ t and 'yes' }} {{ e and 'yes' }} {{ e or 'fallback' }} {{ not e }} {{ not t }} {{ 0 or none }}", V),
    ("logic", "{{ 'x' if t else 'y' }} {{ 'x' if e else 'y' }} [{{ 'x' if e }}]", V),
    ("logic", "{{ not n is defined }} {{ not (n is defined) }} {{ n is not defined }}", V),
    # ---- tests
    ("test", "{{ n is defined }} {{ nope is defined }} {{ nope is undefined }} {{ z is none }} {{ n is none }}", V),
    ("test", "{{ s is string }} {{ n is string }} {{ n is number }} {{ f is number }} {{ t is number }} {{ s is number }}", V),
    ("test", "{{ n is integer }} {{ f is integer }} {{ t is integer }} {{ f is float }} {{ n is float }}", V),
    ("test", "{{ t is boolean }} {{ n is boolean }} {{ t is true }} {{ t is false }} {{ false is false }} {{ 1 is true }}", V),
    ("test", "{{ d is mapping }} {{ l is mapping }} {{ l is sequence }} {{ s is sequence }} {{ d is sequence }} {{ n is sequence }} {{ nope is sequence }}", V),
    ("test", "{{ l is iterable }} {{ s is iterable }} {{ d is iterable }} {{ n is iterable }} {{ z is iterable }} {{ nope is iterable }}", V),
    ("test", "{% macro m() %}{% endmacro %}{{ m is callable }} {{ n is callable }} {{ range is callable }} {{ s.upper is callable }}", V),
    ("test", "{{ 'abc' is lower }} {{ 'aBc' is lower }} {{ 'ABC' is upper }} {{ 'A1' is upper }} {{ '123' is lower }}", V),
    ("test", "{{ 3 is odd }} {{ 3 is even }} {{ 4 is even }} {{ -3 is odd }} {{ 9 is divisibleby 3 }} {{ 10 is divisibleby(3) }}", V),
    ("test", "{{ none is sameas none }} {{ t is sameas true }} {{ 1 is sameas 1 }} {{ l is sameas l }}", V),
    ("test", "{{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 1 is lessthan 0 }} {{ 2 is le 2 }} {{ 3 is gt 2 }} {{ 3 is greaterthan 4 }} {{ 3 is ge 3 }} {{ 2 is in l }} {{ 'q' is in 'abc' }}", V),
    ("test", "{{ 'upper' is filter }} {{ 'nofilter' is filter }} {{ 'odd' is test }} {{ 'zz' is test }}", V),
    ("test", "{{ x is nosuchtest }}", V),
    ("test", "{{ 2.5 is odd }}", V),
    # ---- string methods
    ("strmethod", "[{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ '\\t\\n a \\u00a0'.strip() }}]", V),
    ("strmethod", "{{ 'a,b,,c'.split(',') }} {{ '  a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a-b-c'.rsplit('-') }} {{ ''.split() }} {{ ''.split(',') }}", V),
    ("strmethod", "{{ 'line1\\nline2\\r\\nline3'.splitlines() }}", V),
    ("strmethod", "{{ s.startswith('  He') }} {{ s.endswith('d  ') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('') }}", V),
    ("strmethod", "{{ 'MiXed'.upper() }} {{ 'MiXed'.lower() }} {{ 'hello wORLD'.title() }} {{ 'hello wORLD'.capitalize() }} {{ u.upper() }} {{ \"it's o'neil\".title() }}", V),
    ("casing", "{% for c in ['straße', 'ﬁnal ﬂow', 'İstanbul', 'ΟΔΟΣ ΑΣ.', \"AΣ'\", 'ªΣ', 'ǅx', 'hello wORLD-foo(bar)'] %}{{ c.upper() }}|{{ c.lower() }}|{{ c.title() }}|{{ c.capitalize() }}|{{ c|title }}|{{ c|capitalize }}|{{ c|upper }}|{{ c|lower }};{% endfor %}", V),
    ("strmethod", "{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'abc'.replace('', '-') }}", V),
    ("strmethod", "{{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.rfind('l') }} {{ u.find('w') }} {{ 'banana'.count('an') }} {{ 'ab'.count('') }}", V),
    ("strmethod", "{{ ', '.join(words) }} {{ '-'.join('abc') }}", V),
    ("strmethod", "{{ ', '.join(l) }}", V),
    ("strmethod", "{{ '{} and {}'.format('a', 1) }} {{ '{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='Zed') }} {{ '{{literal}}'.format() }}", V),
    ("format", "{{ '{:02d}|{:>5}|{:<4}|{:^7}|{:.2f}|{!r}|{:+d}|{:x}|{:#o}|{:b}|{:e}|{:.1%}|{:*^9}'.format(3, 'ab', 'c', 'mid', 3.14159, 'x', 5, 255, 8, 5, 12345.678, 0.256, 'st') }}", V),
    ("format", "{{ '{0.role}: {0[content]} {1[0]} {d[a]}'.format(messages[0], l, d=d) }} {{ '{:05}|{:5}|{:>5}|{}'.format(-42, 7, 2.5, 2.5) }}", V),
    ("format", "{{ '{} {}'.format(1) }}", V),
    ("format", "{{ '{:d}'.format('x') }}", V),
    ("format", "{{ '{0} {}'.format(1, 2) }}", V),
    ("printf", "{{ '%s and %d' % ('a', 3) }} {{ '%05.1f' % 2.25 }} {{ '%-5s|' % 'ab' }} {{ '%r' % 'q' }} {{ '%x %X %o' % (255, 255, 8) }} {{ '%+d %i' % (5, 7) }} {{ '%d' % 3.9 }} {{ '%.3d' % 5 }} {{ '%%' % () }} {{ '%(a)s-%(b)s' % {'a': 1, 'b': 2} }} {{ '%s' % [1, 2] }} {{ '1' % ['x'] }} {{ '%e' % 12345.678 }} {{ '%g' % 0.00001 }}", V),
    ("printf", "{{ '%s %s' % ('a',) }}", V),
    ("printf", "{{ ('%.300f' % 1e308)|length }} {{ '{:.300f}'.format(-1e308)|length }} {{ strftime_now('%Y' * 300)|length }}", V),
    ("format_filter", "{{ '%s-%05.1f'|format('a', 2.25) }} {{ '%(x)s!'|format(x=n) }} [{{ 'ab'|center(7) }}] [{{ 'abc'|center(6) }}] [{{ 'abc'|center(2) }}] [{{ n|center(4) }}]", V),
    ("printf", "{{ 'hello' % 5 }}", V),
    ("printf", "{{ '%d' % 'x' }}", V),
    ("strmethod", "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ 'ab1'.isalnum() }} {{ ' '.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }}", V),
    ("strmethod", "{{ s.nosuchmethod }}|{{ s.nosuchmethod() }}", V),
    # ---- dict / list methods
    ("dictmethod", "{{ d.items() }} {{ d.keys() }} {{ d.values() }} {{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dflt') }}", V),
    ("dictmethod", "{{ messages[0].get('content') }} {{ messages[0].get('tool_calls', []) }}", V),
    ("listmethod", "{{ l.index(2) }} {{ l.count(1) }} {{ [1, 1, 2].count(1) }}", V),
    ("listmethod", "{{ l.append(4) }}", V),
    ("listmethod", "{% set x = [] %}{% if x.append(1) %}{% endif %}{{ x }}", V),
    ("listmethod", "{{ d.update({'c': 3}) }}", V),
    ("listmethod", "{{ d.pop('a') }}", V),
    # ---- filters
    ("tojson", "{{ messages|tojson }}", V),
    ("tojson", "{{ d|tojson(indent=2) }}|{{ [1, [2, {}], []]|tojson(indent=4) }}|{{ 'x'|tojson(2) }}", V),
    ("tojson", "{{ {'u': u, 'q': 'a\"b\\\\c', 'ctl': '\\x01\\x1f\\t\\n\\r\\b\\f', 'f': 1.0, 'g': 1e-7, 'h': 1e22, 'z': none, 't': true} |tojson }}", V),
    ("tojson", "{{ (1, 2)|tojson }} {{ {1: 'int key', true: 'b', none: 'n', 2.5: 'f'}|tojson }}", V),
    ("tojson", "{{ {'u': u, 'e': '😀', 'b': [1, {'z': 1, 'a': 2}]}|tojson(ensure_ascii=true) }}|{{ d|tojson(true) }}|{{ {'u': u, 'l': l}|tojson(separators=(',', ':')) }}|{{ {'b': {'y': 1, 'x': 2}, 'a': 0}|tojson(sort_keys=true) }}|{{ d|tojson(indent=1, separators=(', ', ' = '), sort_keys=true) }}", V),
    ("tojson", "{{ {1: 'a', 'b': 2}|tojson(sort_keys=true) }}", V),
    ("tojson", "{{ nope|tojson }}", V),
    ("tojson", "{{ namespace(a=1)|tojson }}", V),
    ("trim", "[{{ s|trim }}] [{{ 'xxhixx'|trim('x') }}] [{{ none|trim }}] [{{ l|trim }}] [{{ nope|trim }}]", V),
    ("length", "{{ l|length }} {{ s|length }} {{ d|length }} {{ u|length }} {{ nope|length }} {{ l|count }}", V),
    ("length", "{{ n|length }}", V),
    ("length", "{{ l|select|length }}", V),
    ("first_last", "{{ l|first }} {{ l|last }} {{ 'abc'|first }} {{ 'abc'|last }} [{{ e|first }}] {{ d|first }}", V),
    ("first_last", "{{ l|select|first }}", V),
    ("first_last", "{{ l|select|last }}", V),
    ("join", "{{ words|join(', ') }} {{ l|join }} {{ l|join('-') }} {{ items|join(',', attribute='name') }} {{ d|join('+') }}", V),
    ("default", "{{ nope|default('dflt') }} {{ n|default('dflt') }} {{ ''|default('dflt') }} {{ ''|default('dflt', true) }} {{ nope|d('x') }} [{{ nope|default }}] {{ none|default('n') }}", V),
    ("case", "{{ 'hello WORLD'|upper }} {{ 'hello WORLD'|lower }} {{ 'hello WORLD'|capitalize }} {{ 'hello wORLD-foo(bar) x'|title }} {{ n|upper }} {{ u|title }}", V),
    ("replace", "{{ 'banana'|replace('a', 'o') }} {{ 'banana'|replace('a', 'o', 2) }} {{ n|replace('7', 'seven') }}", V),
    ("string", "{{ n|string }} {{ l|string }} {{ z|string }} {{ (n|string) + '!' }} {{ f|string|length }}", V),
    ("int_float", "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ 3.9|int }} {{ -3.9|int }} {{ '0x1A'|int(0, 16) }} {{ t|int }} {{ z|int }} {{ ' 12 '|int }}", V),
    ("int_float", "{{ '3.5'|float }} {{ 'x'|float }} {{ 2|float }} {{ 'x'|float(1.5) }} {{ '1e3'|float }} {{ z|float }}", V),
    ("list", "{{ 'abc'|list }} {{ d|list }} {{ l|list }} {{ nope|list }} {{ (l|select)|list }}", V),
    ("map", "{{ items|map(attribute='name')|list }} {{ items|map(attribute='v')|join(',') }} {{ words|map('upper')|list }} {{ items|map(attribute='ok', default='?')|list }}", V),
    ("map", "{{ words|map('replace', 'a', '_')|list }} {{ messages|map(attribute='role')|join(' ') }}", V),
    ("select", "{{ [0, 1, 2, none, '', 'a']|select|list }} {{ l|select('odd')|list }} {{ l|reject('odd')|list }} {{ l|select('gt', 1)|list }} {{ l|select('equalto', 2)|list }}", V),
    ("select", "{{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ items|selectattr('ok')|map(attribute='name')|list }} {{ items|rejectattr('ok')|map(attribute='name')|list }} {{ items|selectattr('ok', 'defined')|list|length }}", V),
    ("select", "{% if messages|selectattr('role', 'equalto', 'nobody') %}generator is truthy{% endif %}", V),
    ("unique", "{{ [1, 2, 1, 3, 2]|unique|list }} {{ ['a', 'A', 'b']|unique|list }} {{ ['a', 'A', 'b']|unique(true)|list }} {{ items|unique(attribute='ok')|map(attribute='name')|list }}", V),
    ("items", "{% for k, v in d|items %}{{ k }}:{{ v }} {% endfor %}{{ nope|items|list }}", V),
    ("items", "{% for x in l|items %}{% endfor %}", V),
    ("dictsort", "{{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ {'b': 1, 'A': 3, 'a': 2}|dictsort }} {{ {'b': 1, 'A': 3, 'a': 2}|dictsort(true) }} {{ d|dictsort(by='value') }}", V),
    ("sort", "{{ l|sort }} {{ l|sort(reverse=true) }} {{ words|sort }} {{ words|sort(case_sensitive=true) }} {{ items|sort(attribute='v')|map(attribute='name')|list }} {{ [(2, 'b'), (1, 'z'), (2, 'a')]|sort }}", V),
    ("sort", "{{ [1, 'a']|sort }}", V),
    ("indent", "[{{ 'a\\nb\\n\\nc'|indent }}] [{{ 'a\\nb'|indent(2, true) }}] [{{ 'a\\n\\nb'|indent(2, blank=true) }}] [{{ 'a\\nb'|indent('> ') }}] [{{ ''|indent(first=true) }}]", V),
    ("safe_escape", "{{ '<b>&\"\\''|escape }} {{ '<b>'|e }} {{ '<i>'|safe }} {{ 5|safe }}", V),
    ("round", "{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 7|round }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ -1.5|round }} {{ 1234.5|round(-2) }}", V),
    ("abs", "{{ -3|abs }} {{ (-3)|abs }} {{ -2.5|abs }} {{ 4|abs }}", V),
    ("abs", "{{ 'x'|abs }}", V),
    ("sum", "{{ l|sum }} {{ [1.5, 2]|sum }} {{ items|sum(attribute='v') }} {{ l|sum(start=10) }} {{ e|sum }}", V),
    ("minmax", "{{ l|min }} {{ l|max }} {{ words|min }} {{ words|max }} {{ words|max(case_sensitive=true) }} {{ items|max(attribute='v') }} [{{ e|min }}]", V),
    ("reverse", "{{ 'abc'|reverse }} {{ l|reverse|list }} {{ u|reverse }}", V),
    ("batch", "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 'x')|list }}", V),
    ("wordcount", "{{ 'hello big_world, 42 times!'|wordcount }} {{ ''|wordcount }} {{ u|wordcount }}", V),
    ("filter", "{{ n|nosuchfilter }}", V),
    # ---- globals
    ("range", "{{ range(3)|list }} {{ range(1, 4)|list }} {{ range(10, 0, -3)|list }} {{ range(0)|list }}", V),
    ("range", "{% for i in range(messages|length - 1, -1, -1) %}{{ messages[i].role[0] }}{% endfor %}", V),
    ("range", "{{ range(1000000)|length }}", V),
    ("raise", "{{ raise_exception('boom: ' ~ n) }}", V),
    ("strftime", "{{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%B %d, %Y %H:%M') }}", V),
    ("dict", "{{ dict(a=1, b='x') }} {{ dict(a=1).a }}", V),
    # ---- undefined behaviour
    ("undefined", "[{{ nope }}] {{ nope is defined }} {{ nope|length }} {{ not nope }} {% for x in nope %}x{% endfor %}{{ nope == nope }}", V),
    ("undefined", "{{ nope() }}", V),
    ("undefined", "{{ nope[0] }}", V),
    ("undefined", "{{ d.missing|default('fallback') }} {{ messages[0].tool_calls is defined }}", V),
    ("undefined", "{{ nope < 1 }}", V),
    # ---- syntax errors
    ("syntax", "{% if x %}never closed", {}),
    ("syntax", "{{ 1 + }}", {}),
    ("syntax", "{% endfor %}", {}),
    ("syntax", "{% break %}", {}),
    ("syntax", "{{ 'unterminated }}", {}),
    ("syntax", "{{ 007 }}", {}),
    # ---- realistic chat-template idioms
    ("idiom", "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set sys = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% endif %}{% for m in loop_messages %}{{ '<|' + m['role'] + '|>\\n' + m['content'] | trim + '\\n' }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}", dict(V, add_generation_prompt=True)),
    ("idiom", "{% for tc in messages[2].tool_calls %}{% if tc.function is defined %}{% set tc = tc.function %}{% endif %}<tool_call>\\n{\"name\": \"{{ tc.name }}\", \"arguments\": {% if tc.arguments is string %}{{ tc.arguments }}{% else %}{{ tc.arguments | tojson }}{% endif %}}\\n</tool_call>{% endfor %}", V),
    ("idiom", "{%- set ns = namespace(last_user=-1) -%}{%- for m in messages -%}{%- if m.role == 'user' -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}{%- endfor -%}{{ ns.last_user }}", V),
    ("idiom", "{{- bos_token }}{%- for message in messages %}\n    {%- if message['role'] == 'user' %}\n        {{- '[INST] ' + message['content'] + ' [/INST]' }}\n    {%- elif message['role'] == 'assistant' %}\n        {{- ' ' + message['content'] + eos_token}}\n    {%- endif %}\n{%- endfor %}", dict(V, bos_token="<s>", eos_token="</s>")),
    ("idiom", "{{ (messages|length) // 2 }} {{ messages|map(attribute='content')|select('string')|map('length')|list }}", V),
]


def main():
    out = []
    for i, (group, tpl, variables) in enumerate(CASES):
        status, value = jinja_oracle.render(tpl, variables)
        case = {"id": "%s_%03d" % (group, i), "template": tpl, "vars": variables}
        if status == "ok":
            case["rendered"] = value
        else:
            case["error"] = value
        out.append(case)
    dest = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "chat" / "jinja_cases.json"
    doc = {"generated_by": "tests/e2e/gen_jinja_cases.py", "oracle": "python3-jinja2 %s" % jinja_oracle.JINJA2_VERSION,
           "source_date_epoch": jinja_oracle.FIXED_EPOCH, "cases": out}
    dest.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print("%d cases (%d errors) -> %s" % (len(out), sum("error" in c for c in out), dest))


if __name__ == "__main__":
    main()
