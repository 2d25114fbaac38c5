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
"""Whether the pre-check's ``[filter_scheduler]`` is the scheduler's.

With ``[image_traits] precheck_scheduler_filters``, nova-api runs the
scheduler's rebuild filters with the ``[filter_scheduler]`` it reads
itself: it must be the scheduler's, or nova-api refuses what the scheduler
accepts (or the other way round). As :mod:`.isolation` does for the
conductors, the check compares the configuration it reads with the one
each nova-scheduler of this host was started with (its command line's
``--config-file``/``--config-dir``, or nova's default files). It cannot
read another host's configuration.
"""

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from nova_image_traits.status import config
from nova_image_traits.status import isolation

Code = upgradecheck.Code
Result = upgradecheck.Result

# NOTE(nova-image-traits): nova's own options (nova/conf/scheduler.py) that
# its RUN_ON_REBUILD filters read, with nova's names, types and defaults, so
# that nova.conf is read without importing nova.
_REBUILD_FILTER_OPTS = [
    cfg.StrOpt('image_properties_default_architecture'),
    cfg.StrOpt('aggregate_image_properties_isolation_namespace'),
    cfg.StrOpt('aggregate_image_properties_isolation_separator',
               default='.'),
    cfg.ListOpt('isolated_images', default=[]),
    cfg.ListOpt('isolated_hosts', default=[]),
    cfg.BoolOpt('restrict_isolated_hosts_to_isolated_images', default=True),
]
#: The options compared, in the order they are named.
COMPARED = tuple(o.name for o in config._FILTER_OPTS + _REBUILD_FILTER_OPTS)


def register_opts(conf):
    """Register the options the rebuild filters read on ``conf``."""
    conf.register_opts(_REBUILD_FILTER_OPTS, group='filter_scheduler')


def values(conf):
    """``{option: value}`` of :data:`COMPARED` in ``conf``."""
    opts = conf.filter_scheduler
    return {name: _comparable(opts[name]) for name in COMPARED}


def _comparable(value):
    return tuple(value) if isinstance(value, list) else value


def values_of(args):
    """:func:`values` in the configuration ``args`` name.

    :raises: what oslo.config raises for a file it cannot read or parse
    """
    conf = cfg.ConfigOpts()
    config.register_opts(conf)
    register_opts(conf)
    conf(args=list(args), project='nova', validate_default_values=True)
    return values(conf)


def check(conf, schedulers):
    """Warn when a scheduler of this host reads another ``[filter_scheduler]``.

    :param conf: the ConfigOpts the check reads
    :param schedulers: this host's nova-scheduler processes
        (:func:`.conductor.find` with ``names=(SCHEDULER,)``)
    """
    if not conf.image_traits.precheck_scheduler_filters:
        return Result(Code.SUCCESS, '[image_traits] precheck_scheduler_'
                      'filters is off: nova-api runs no scheduler filter.')
    here = values(conf)
    details = ['[image_traits] precheck_scheduler_filters is on: nova-api '
               'runs the rebuild filters of [filter_scheduler] '
               'enabled_filters (%s) as read here; it must be the '
               "scheduler's on every nova-api host."
               % ', '.join(here['enabled_filters'])]
    code, verified = _verify()
    details.append(verified)
    seen, differ, sentences = isolation.compare_started(
        schedulers, values_of, lambda theirs: ', '.join(
            n for n in COMPARED if theirs[n] != here[n]),
        'schedulers', '[filter_scheduler]')
    details.extend(sentences)
    if not seen:
        details.append('No nova-scheduler runs on this host: compare '
                       "[filter_scheduler] with the scheduler hosts' by "
                       'hand.')
    if differ:
        code = Code.WARNING
    return Result(code, ' '.join(details))


def _verify():
    """``(code, sentence)``: whether this nova has what the filters use."""
    try:
        from nova_image_traits.api import host_filters
    except ImportError as e:
        return Code.SUCCESS, ('nova is not installed here, so the names the '
                              'pre-check runs the filters with cannot be '
                              'verified (%s).' % e)
    try:
        host_filters.verify()
    except Exception as e:
        return Code.WARNING, ('The installed nova lacks what the pre-check '
                              'runs the filters with (%s): every rebuild '
                              'goes on to nova, with a WARNING.' % e)
    return Code.SUCCESS, ('The installed nova has what the pre-check runs '
                          'the filters with.')
