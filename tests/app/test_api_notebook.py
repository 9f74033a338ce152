"""render()'s image displays itself in a notebook (issue 43.8): an HxWx4 uint8 array whose _repr_png_ is that
picture; what is no longer a picture (a pixel, a float copy) falls back to the text repr, and arithmetic gives
plain numpy values."""
from io import BytesIO

import numpy as np
from PIL import Image

from app import api


def test_the_rendered_image_is_a_png_of_itself(qapp):
    image = api.render(prompt="로봇이 컵을 집었다", size=(320, 180), camera="front")
    assert isinstance(image, api.RenderedImage) and isinstance(image, np.ndarray)
    assert image.shape == (180, 320, 4) and image.dtype == np.uint8
    png = Image.open(BytesIO(image._repr_png_()))
    assert png.mode == "RGBA" and png.size == (320, 180)
    assert (np.asarray(png) == image).all() and image[..., :3].std() > 5
    rgb = image[20:120, 40:200, :3]  # a crop without alpha is still a picture
    assert np.asarray(Image.open(BytesIO(rgb._repr_png_()))).tolist() == rgb.tolist()
    for not_a_picture in (image[0, 0], image.astype(float), image[..., 0], image[:0]):
        assert not_a_picture._repr_png_() is None
    assert type(image.mean()) is np.float64 and type(image * 2) is np.ndarray and type(image == 0) is np.ndarray
