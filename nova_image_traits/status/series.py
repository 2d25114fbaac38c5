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
"""The check of the nova this host runs beside, against the support matrix.

It reads the installed distribution's version (:mod:`nova_image_traits.series`)
and never imports nova, so it answers on a host without nova too.
"""

from oslo_upgradecheck import upgradecheck

from nova_image_traits import series

Code = upgradecheck.Code
Result = upgradecheck.Result


def check_nova(version):
    """Say which series ``version`` is, or warn when it is not supported.

    :param version: the installed nova's version, or None without nova
    """
    if version is None:
        return Result(Code.SUCCESS, (
            'nova is not installed in this environment; the filter and the '
            'hook run only where it is. This release supports %s.'
            % series.supported()))
    found = series.of_nova(version)
    if found is None:
        return Result(Code.WARNING, (
            'nova %s is outside the support matrix of this release, '
            'which supports %s. The hook verifies the nova internals it '
            'relies on when nova-image-traits-conductor starts, but this '
            'nova is untested.' % (version, series.supported())))
    return Result(Code.SUCCESS, 'nova %s, series %s, placement %d of that '
                  'series: in the support matrix.'
                  % (version, found.name, found.placement))
