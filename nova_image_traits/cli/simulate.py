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
"""``nova-image-traits simulate``: every strategy on a simulated cloud.

The simulator itself is the :mod:`nova_image_traits.simulate` package; this
command only reads the arguments and prints its tables. The package and
its ``[simulate]`` extra (openstack-placement) may be left out of an
install: the other commands and the decision path do not need them.
"""

import importlib

from cliff.formatters import value
from cliff import lister
from stevedore import extension

from nova_image_traits import cli
from nova_image_traits.cli import derive


def _simulator(name):
    """Import ``nova_image_traits.simulate.<name>``, or say what is missing.

    :raises UsageError: when this install has no simulator
    """
    try:
        return importlib.import_module('nova_image_traits.simulate.' + name)
    except ImportError as e:
        if not (e.name or '').startswith('nova_image_traits.simulate'):
            raise
        raise cli.UsageError(
            'simulate is not available: this installation of '
            'nova-image-traits has no simulator (%s)' % e)


class Simulate(cli.CommandMixin, lister.Lister):
    """Compare every strategy on every rebuild case of a simulated cloud.

    Starts a real placement in this process, loads a scenario into it (the
    bundled sample cloud by default) and prints a compact matrix: one row
    per rebuild case, one short cell per strategy. --long, or any machine
    format (-f json, yaml, csv, value), gives one row per case and
    strategy with the reasons instead; -f dot draws each case's provider
    tree. What nova derives from image properties (vTPM, secure boot, bus
    and model prefilters...) is judged where nova is importable; elsewhere
    one line on stderr says it was not.
    """

    COLUMNS = ('Case', 'Host', 'Image', 'Traits At', 'Strategy', 'Outcome',
               'Allowed', 'Fallback', 'Missing', 'Requests', 'Derived',
               'Requirements', 'Reason')

    def _load_formatter_plugins(self):
        # NOTE(founders): -f dot prints the single DOT cell as it is, as
        # -f value does; it is added here only, not for every command.
        plugins = super()._load_formatter_plugins()
        return extension.ExtensionManager.make_test_instance(
            list(plugins.extensions) + [extension.Extension(
                'dot', None, value.ValueFormatter, value.ValueFormatter())],
            namespace=plugins.namespace)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--scenario', metavar='FILE',
            help='YAML scenario to load (default: the bundled '
                 'sample-cloud.yaml)')
        parser.add_argument(
            '--case', metavar='NAME', action='append', default=[],
            help='Judge only this case; may be repeated.')
        parser.add_argument(
            '--host', metavar='HOST', action='append', default=[],
            help='Only the cases whose server is on HOST; may be '
                 'repeated. Handy with -f dot.')
        parser.add_argument(
            '--matrix', action='store_true',
            help='One row per case and one column per strategy, each cell '
                 'the outcome (and the fallback strategy that decided it, '
                 'if one did). The strategy table of the documentation is '
                 'this output for the bundled cloud, with -f csv.')
        parser.add_argument(
            '--long', action='store_true',
            help='One row per case and strategy, with the reason, the '
                 'fallback, the missing traits and the placement requests. '
                 'The default for every format but table.')
        cli.add_strategy_options(parser, 'all')
        cli.add_config_option(parser)
        return parser

    #: The lines printed under the compact matrix.
    _legend = ()

    def produce_output(self, parsed_args, column_names, data):
        result = super().produce_output(parsed_args, column_names, data)
        for line in self._legend:
            self.app.stdout.write(line + '\n')
        return result

    def take_action(self, parsed_args):
        scenario, run = _simulator('scenario'), _simulator('run')
        tables = _simulator('tables')
        conf = cli.load_conf(parsed_args.config_file)
        names = cli.selected_strategies(parsed_args, conf, default_all=True)
        scn = scenario.load(parsed_args.scenario or scenario.sample_path())
        cases = scenario.select(scn, parsed_args.case, parsed_args.host)

        def decide(request, client):
            return [cli.decide(request, conf, client, name,
                               parsed_args.fallback_strategy)
                    for name in names]

        deriver = derive.Deriver(conf)
        note = deriver.note()
        if note:
            self.app.stderr.write('simulate: %s\n' % note)
        drawing = parsed_args.formatter == 'dot'
        judged = run.judge(scn, cases, decide, drawing=drawing,
                           deriver=deriver)
        if drawing:
            return ('DOT',), [(_simulator('dot').render(
                [j.panel for j in judged]),)]
        if (parsed_args.formatter == 'table' and not parsed_args.long
                and not parsed_args.matrix):
            self._legend = tables.legend(
                names, [d for j in judged for d in j.decisions])
            return tables.compact(names, judged)
        if parsed_args.matrix:
            return tables.matrix(names, judged)
        return self.COLUMNS, tables.long(judged)
