# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Render a saved run again: ``python -m benchmarks.report PATH [--rst]``.

The targets are judged again (:mod:`benchmarks.targets`) on the JSON-able
results dict that :mod:`benchmarks.run` writes, and rendered as Markdown
or, with ``--rst``, as the tables of the performance page
(:mod:`benchmarks.tables`).

:func:`keep_hand_written` carries the hand-written sections of the old
``RESULTS.md`` (those with :data:`HAND_WRITTEN` in them, such as the load
run's) into the one :mod:`benchmarks.run` writes, before ``## Verdict``.
"""

import argparse
import json
import sys

from benchmarks import tables
from benchmarks import targets

#: The line that marks a hand-written ``## `` section of RESULTS.md.
HAND_WRITTEN = ('_Hand-written, not generated: `tox -e bench` keeps this '
                'section when it writes this file again._')
VERDICT = '## Verdict'


def hand_written_sections(text):
    """The ``## `` sections of TEXT that hold :data:`HAND_WRITTEN`."""
    sections, current = [], []
    for line in text.splitlines() + ['# end']:
        if line.startswith(('# ', '## ')):
            if current and HAND_WRITTEN in current:
                sections.append('\n'.join(current).strip())
            current = []
        if line.startswith('## ') or current:
            current.append(line)
    return sections


def keep_hand_written(new, old):
    """NEW, the generated RESULTS.md, with OLD's hand-written sections.

    They go just before NEW's ``## Verdict``, in their old order; a
    section NEW has under the same title is not added twice.
    """
    titles = {line for line in new.splitlines() if line.startswith('## ')}
    kept = [s for s in hand_written_sections(old)
            if s.splitlines()[0] not in titles]
    if not kept:
        return new
    at = new.find('\n%s\n' % VERDICT)
    if at < 0:
        return new.rstrip('\n') + '\n\n' + '\n\n'.join(kept) + '\n'
    return new[:at + 1] + '\n\n'.join(kept) + '\n\n' + new[at + 1:]


def main(argv=None):
    """Render a saved results file again."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument('path')
    parser.add_argument('--rst', action='store_true')
    args = parser.parse_args(argv)
    with open(args.path) as f:
        results = json.load(f)
    verdicts = targets.evaluate(results)
    render = tables.render_rst if args.rst else tables.render_markdown
    sys.stdout.write(render(results, verdicts) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
