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
"""The commands of ``nova-image-traits`` (cliff), and what they share.

The commands are registered in the entry point namespace
:data:`NAMESPACE`; :mod:`nova_image_traits.cmd.cli` is the application.
Every command only reads: none changes nova or placement.
"""

import re

from oslo_config import cfg

from nova_image_traits import conf as nit_conf
from nova_image_traits.conf import image_traits as image_traits_conf
from nova_image_traits import decision as nit_decision
from nova_image_traits import engine
from nova_image_traits import strategies

#: Entry point namespace of the commands.
NAMESPACE = 'nova_image_traits.cli'
#: ``--strategy all`` selects every strategy.
ALL = 'all'
STRATEGIES = image_traits_conf.STRATEGIES
#: Strategies whose verdict depends on the server itself (its allocations),
#: not only on its host, image and flavor.
PER_SERVER = frozenset(['allocation_traits'])
#: The longest reason shown in a table cell.
_REASON_LIMIT = 160


class UsageError(Exception):
    """Bad input to a command: reported in one line, exit code 2."""

    exit_code = 2


class CommandMixin:
    """Turn :class:`UsageError` into a one-line message and exit code 2.

    Mix it in before cliff's ``Command``, ``Lister`` or ``ShowOne``. A
    command whose output was written sets :attr:`exit_status` in
    ``take_action`` when that output is bad news (a refusal, a failure).
    """

    def run(self, parsed_args):
        self.exit_status = 0
        try:
            return super().run(parsed_args) or self.exit_status
        except UsageError as e:
            self.app.stderr.write('%s: error: %s\n' % (self.app.NAME, e))
            return e.exit_code


def add_config_option(parser, search=False):
    """Add ``--config-file`` (and ``--config-dir``), to read nova.conf.

    :param search: whether no option means nova's own configuration files,
        found as nova-status finds them
    """
    default = (' Default: nova\'s configuration, found as nova-status finds '
               'it (/etc/nova/nova.conf and /etc/nova/nova.conf.d/ among '
               'others).' if search else '')
    parser.add_argument(
        '--config-file', metavar='FILE', action='append', default=[],
        help='Read [image_traits] options (strategy, fallback_strategy, '
             'limits) from FILE, for example /etc/nova/nova.conf. May be '
             'repeated; later files win.' + default)
    if search:
        parser.add_argument(
            '--config-dir', metavar='DIR', action='append', default=[],
            help='Also read every *.conf file of DIR, as nova does.')


def add_strategy_options(parser, default):
    """Add ``--strategy`` (repeatable, or ``all``) and ``--fallback``.

    :param default: what no ``--strategy`` means, for the help text
    """
    parser.add_argument(
        '--strategy', metavar='NAME', action='append', default=[],
        choices=list(STRATEGIES) + [ALL],
        help='Strategy to judge with: %s, or %s for every one. May be '
             'repeated. Default: %s.' % (
                 ', '.join(STRATEGIES), ALL, default))
    parser.add_argument(
        '--fallback-strategy', metavar='NAME', choices=STRATEGIES,
        help='Strategy deciding when the strategy is inconclusive. '
             'Default: [image_traits] fallback_strategy (root_traits).')


def plain_error(error):
    """A configuration error in one line, naming the file at fault."""
    # NOTE(founders): oslo.config names the source of a bad value as "from
    # LocationInfo(location=..., detail='/etc/nova/nova.conf')".
    return re.sub(r"from LocationInfo\(.*?detail='([^']*)'\)", r'in \1',
                  str(error))


def load_conf(config_files=(), config_dirs=(), search=False):
    """Return a private ConfigOpts with our options, read from files.

    :param config_files: nova.conf-style files to read
    :param config_dirs: directories whose ``*.conf`` files to read too
    :param search: with neither, read nova's own files, found as
        nova-status finds them; otherwise none means the options' defaults
    :raises UsageError: when a file is missing or unreadable, or a value
        is invalid
    """
    files, dirs = list(config_files), list(config_dirs)
    if search and not files and not dirs:
        files = cfg.find_config_files(project='nova', prog='nova')
        dirs = cfg.find_config_dirs(project='nova', prog='nova')
    conf = cfg.ConfigOpts()
    nit_conf.register_opts(conf)
    try:
        conf(args=[], project='nova', default_config_files=files,
             default_config_dirs=dirs)
        # Values are checked when read: read them now.
        for opt in image_traits_conf.ALL_OPTS:
            getattr(conf.image_traits, opt.dest)
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigFileParseError,
            cfg.ConfigDirNotFoundError, ValueError) as e:
        raise UsageError(plain_error(e))
    conf.nit_sources = files + dirs
    return conf


def describe_conf(conf):
    """One line: which files were read, and which strategy they set."""
    opts = conf.image_traits
    return 'configuration: %s; strategy %s, fallback %s' % (
        ', '.join(conf.nit_sources) or 'none found (defaults)',
        opts.strategy, opts.fallback_strategy)


def selected_strategies(parsed_args, conf, default_all=False):
    """Return the strategies a command was asked to run, in order."""
    chosen = parsed_args.strategy or (
        [ALL] if default_all else [conf.image_traits.strategy])
    return list(STRATEGIES) if ALL in chosen else list(dict.fromkeys(chosen))


def decide(request, conf, client, strategy, fallback=None):
    """Run the engine with ``strategy`` (and ``fallback``) on ``request``.

    :returns: the :class:`~nova_image_traits.decision.Decision`
    """
    conf.set_override('strategy', strategy, group='image_traits')
    if fallback:
        conf.set_override('fallback_strategy', fallback,
                          group='image_traits')
    return engine.decide(request, conf=conf, client=client)


def can_share(strategy, conf):
    """Whether one decision serves every server of a host, image, flavor.

    Only ``allocation_traits`` reads the server's own allocations; a
    decision that may fall back to it cannot be shared either.
    """
    return not PER_SERVER & {strategy, conf.image_traits.fallback_strategy}


def join(values):
    """Render a set of names as a sorted, comma-separated cell, or -."""
    return ', '.join(sorted(values)) or '-'


def _first_sentence(text):
    return re.split(r'(?<=[.?!])\s', str(text).strip(), maxsplit=1)[0]


def short_reason(decision):
    """A one-line reason for a table cell: the rule or the cause.

    The full user-facing reason is :meth:`Decision.reason_for`.
    """
    detail = decision.detail or ''
    if decision.fallback:
        # The engine joins "<first detail>; <fallback>: <its detail>".
        first, _sep, detail = detail.partition('; %s: ' % decision.fallback)
        if detail in (nit_decision.ACCEPT, nit_decision.REJECT):
            detail = ''
    if decision.cause == 'traits-missing' and any(
            r.derived for r in decision.unmet):
        # The refusal names the image properties the traits come from.
        text = '%s: %s' % (decision.decided_by,
                           _first_sentence(decision.message))
    elif decision.cause == 'traits-missing':
        text = '%s: %s' % (decision.decided_by,
                           strategies.load(decision.decided_by).rule)
    elif decision.allowed and decision.outcome == nit_decision.ACCEPT:
        if not decision.required:
            text = 'the new image requires no traits'
        else:
            text = detail or '%s: every required trait found' % (
                decision.decided_by)
    elif decision.cause in ('invalid-image-trait', 'forbidden-by-flavor',
                            'too-many-traits', 'query-too-long'):
        text = _first_sentence(decision.message)
    else:
        text = '%s: %s' % (decision.cause or decision.outcome,
                           detail or _first_sentence(decision.message))
    if decision.fallback:
        text = '%s inconclusive (%s); %s' % (
            decision.strategy, first.split(':')[0], text)
    return cut(' '.join(text.split()), _REASON_LIMIT)


def cut(text, limit):
    """``text``, or its first ``limit`` characters ending in '...'."""
    return text if len(text) <= limit else text[:limit - 3] + '...'
