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
"""Whether aggregate isolation is set alike where this check can see.

``[scheduler] enable_isolated_aggregate_filtering`` must match on the
nova-api, conductor and scheduler hosts: a service where it is off accepts
the rebuilds the others refuse. The check cannot read another host's
configuration. It compares the configuration it reads with the one each
conductor of this host was started with: the files its command line names
(``--config-file``, ``--config-dir``; oslo.service keeps the command line
in the parent's title), or nova's default files when it names none.
"""

import shlex

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from nova_image_traits.cli import isolation as cli_isolation

Code = upgradecheck.Code
Result = upgradecheck.Result
OPTION = cli_isolation.OPTION
#: The flags a command line names nova's configuration with.
_FLAGS = ('--config-file', '--config-dir')


def config_args(argv):
    """The ``--config-file``/``--config-dir`` arguments of a command line.

    :param argv: the command line as :mod:`.conductor` reads it; a title
        ``<program>: master process [<command line>]`` is read inside its
        brackets
    :returns: a list of arguments, or None when the line does not show
        them (a worker's title)
    """
    if len(argv) == 1 and ': ' in argv[0]:
        _name, _sep, title = argv[0].partition(': ')
        if '[' not in title or not title.endswith(']'):
            return None
        try:
            argv = shlex.split(title[title.index('[') + 1:-1])
        except ValueError:
            return None
    args = []
    for index, arg in enumerate(argv):
        flag, sep, value = arg.partition('=')
        if flag not in _FLAGS:
            continue
        if not sep:
            if index + 1 >= len(argv):
                continue
            value = argv[index + 1]
        args.extend([flag, value])
    return args


def compare_started(processes, read, differs, kind, values):
    """Each of ``processes``'s configuration, against the one read here.

    :param processes: processes of this host (:mod:`.conductor`'s)
    :param read: reads the values compared from a process's
        :func:`config_args`; what it raises makes the process unread
    :param differs: what differs in the values a process read, in words,
        or an empty string when nothing does
    :param kind: what the processes are, plural (``'conductors'``)
    :param values: what differs, for the sentence (``'value'``)
    :returns: ``(seen, differ, sentences)``: how many command lines were
        read, whether a process differs, and the sentences that say which
        differ and which could not be read
    """
    seen, differ, unread = 0, [], []
    for proc in processes:
        args = config_args(proc.argv)
        if args is None:
            continue  # a worker: its parent's line is read
        seen += 1
        try:
            theirs = read(args)
        except Exception as e:
            unread.append('%d (%s)' % (proc.pid, e))
            continue
        what = differs(theirs)
        if what:
            differ.append('%d (%s)' % (proc.pid, what))
    sentences = []
    if differ:
        sentences.append('%s of this host were started with another %s: '
                         '%s.' % (kind.capitalize(), values,
                                  '; '.join(differ)))
    if unread:
        sentences.append('The configuration of %s %s cannot be read here.'
                         % (kind, '; '.join(unread)))
    return seen, bool(differ), sentences


def value_of(args):
    """The option's value in the configuration ``args`` name.

    :param args: ``--config-file``/``--config-dir`` arguments; nova's
        default files (oslo.config's search for project ``nova``) when empty
    :raises: what oslo.config raises for a file it cannot read or parse
    """
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.BoolOpt(OPTION, default=False), group='scheduler')
    conf(args=list(args), project='nova', validate_default_values=True)
    return conf.scheduler[OPTION]


def check(conf, conductors):
    """Warn when a conductor of this host reads another value.

    :param conf: the ConfigOpts the check reads
    :param conductors: this host's :class:`.conductor.Conductor` processes
    """
    here = cli_isolation.enabled(conf)
    details = ['[scheduler] %s is %s in the configuration read here; set '
               'it alike on the nova-api, conductor and scheduler hosts.'
               % (OPTION, here)]
    _seen, differ, sentences = compare_started(
        conductors, value_of,
        lambda value: '' if value == here else str(value),
        'conductors', 'value')
    details.extend(sentences)
    return Result(Code.WARNING if differ else Code.SUCCESS,
                  ' '.join(details))
